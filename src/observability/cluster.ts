// Node cluster mode (PLACEMENT_WORKERS > 1): a scrape reaches one server
// process, chosen by the primary's round robin, yet must show the whole
// service. That process asks the primary over IPC; the primary asks every
// server process for a snapshot of its registry and sums them with its own
// (it runs the sweeps) and with what processes that have exited had counted,
// so counters never go down when a process is replaced.
//
//   server process --gather--> primary --snapshot-request--> every server process
//   server process <-gathered-- primary <--snapshot--------- every server process
import cluster, { type Worker } from 'node:cluster';
import * as z from 'zod';
import { type FamilySnapshot, mergeSnapshots } from './registry.js';
import type { ServiceMetrics } from './service.js';
import type { GatheredMetrics, MetricsSource } from './source.js';
import { sendToWorker } from '../shared/send-to-worker.js';

/** How long the primary waits for each server process's snapshot; a late one counts with its previous snapshot. */
const SNAPSHOT_WAIT_MS = 1000;
/** How long a server process waits for the primary's answer before the scrape fails. */
const GATHER_WAIT_MS = 3000;

const Series = z.object({
  labels: z.array(z.string()),
  value: z.number().optional(),
  counts: z.array(z.number()).optional(),
  sum: z.number().optional(),
});
const Family = z.object({
  name: z.string(),
  help: z.string(),
  type: z.enum(['counter', 'gauge', 'histogram']),
  labelNames: z.array(z.string()),
  buckets: z.array(z.number()).optional(),
  merge: z.enum(['sum', 'max']).optional(),
  series: z.array(Series),
});
const Message = z.discriminatedUnion('type', [
  z.object({ type: z.literal('placement-metrics:gather'), id: z.number() }),
  z.object({ type: z.literal('placement-metrics:snapshot-request'), id: z.number() }),
  z.object({ type: z.literal('placement-metrics:snapshot'), id: z.number(), families: z.array(Family) }),
  z.object({ type: z.literal('placement-metrics:gathered'), id: z.number(), families: z.array(Family), processes: z.number() }),
]);
type Message = z.infer<typeof Message>;

/** Our messages among whatever else travels on the channel (cluster's own are objects too). */
function ours(raw: unknown): Message | undefined {
  if (typeof raw !== 'object' || raw === null || !String((raw as { type?: unknown }).type).startsWith('placement-metrics:'))
    return undefined;
  const parsed = Message.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

/** Counters and histograms only: what a process that has exited keeps contributing. */
const cumulative = (families: FamilySnapshot[]) => families.map((f) => (f.type === 'gauge' ? { ...f, series: [] } : f));

/** In a server process: answers the primary's snapshot requests, and gathers the cluster's metrics for a scrape. */
export function clusterMetricsSource(metrics: ServiceMetrics): MetricsSource {
  let nextId = 0;
  const waiting = new Map<number, (gathered: GatheredMetrics) => void>();
  const send = (message: Message) => process.send?.(message);
  process.on('message', (raw: unknown) => {
    const message = ours(raw);
    if (message?.type === 'placement-metrics:snapshot-request') {
      send({ type: 'placement-metrics:snapshot', id: message.id, families: metrics.registry.snapshot() });
    } else if (message?.type === 'placement-metrics:gathered') {
      waiting.get(message.id)?.({ families: message.families, processes: message.processes });
    }
  });
  return {
    scope: 'cluster',
    gather: () =>
      new Promise<GatheredMetrics>((resolve, reject) => {
        const id = (nextId += 1);
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error(`the cluster primary did not answer within ${GATHER_WAIT_MS} ms`));
        }, GATHER_WAIT_MS);
        waiting.set(id, (gathered) => {
          clearTimeout(timer);
          waiting.delete(id);
          resolve(gathered);
        });
        send({ type: 'placement-metrics:gather', id });
      }),
  };
}

/** In the primary: answers server processes' gather requests with the sum over the cluster. */
export function serveClusterMetrics(metrics: ServiceMetrics): void {
  let nextId = 0;
  /** Each live process's latest snapshot, by cluster worker id. */
  const latest = new Map<number, FamilySnapshot[]>();
  /** What processes that have exited had counted. */
  let retired: FamilySnapshot[] = [];
  const answers = new Map<number, (workerId: number, families: FamilySnapshot[]) => void>();

  cluster.on('exit', (worker) => {
    const last = latest.get(worker.id);
    latest.delete(worker.id);
    if (last) retired = mergeSnapshots([retired, cumulative(last)]);
  });

  async function gather(): Promise<GatheredMetrics> {
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w?.isConnected() === true);
    const id = (nextId += 1);
    const pending = new Set(workers.map((w) => w.id));
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, SNAPSHOT_WAIT_MS);
      function done() {
        clearTimeout(timer);
        answers.delete(id);
        resolve();
      }
      answers.set(id, (workerId, families) => {
        latest.set(workerId, families);
        pending.delete(workerId);
        if (pending.size === 0) done();
      });
      if (pending.size === 0) done();
      for (const worker of workers) sendToWorker(worker, { type: 'placement-metrics:snapshot-request', id } satisfies Message);
    });
    return {
      families: mergeSnapshots([metrics.registry.snapshot(), retired, ...workers.map((w) => latest.get(w.id) ?? [])]),
      // The primary and every server process counted (a late one with its previous snapshot).
      processes: 1 + workers.filter((w) => latest.has(w.id)).length,
    };
  }

  cluster.on('message', (worker: Worker, raw: unknown) => {
    const message = ours(raw);
    if (message?.type === 'placement-metrics:snapshot') answers.get(message.id)?.(worker.id, message.families);
    else if (message?.type === 'placement-metrics:gather') {
      void gather().then((gathered) => {
        sendToWorker(worker, { type: 'placement-metrics:gathered', id: message.id, ...gathered } satisfies Message);
      });
    }
  });
}
