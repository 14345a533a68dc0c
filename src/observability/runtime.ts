// What a Node process's answers wait on besides their own work, and what it
// holds: garbage collections (each one's pause, by kind), the event loop's
// delay (how late a timer due at a random moment ran: what a request arriving
// then waits before the process turns to it, behind another answer or a
// collection) and its memory (resident, V8's heap spaces, memory outside the
// heap). Node only (the entries install it; a Worker isolate has none of
// these). In a cluster each process counts its own and a scrape sums them:
// the delays of every server process in one histogram, the memory of every
// process (the largest single one beside it).
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import type { Registry } from './registry.js';

/** From a short scavenge to a long mark-compact. */
const GC_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
/** From a loop that was free to one held behind several answers. */
const LOOP_DELAY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** How often the event loop's delay is sampled. */
const LOOP_SAMPLE_MS = 10;

const GC_KINDS = new Map<number, string>([
  [constants.NODE_PERFORMANCE_GC_MINOR, 'minor'],
  [constants.NODE_PERFORMANCE_GC_MAJOR, 'major'],
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'],
  [constants.NODE_PERFORMANCE_GC_WEAKCB, 'weakcb'],
]);

export interface RuntimeWatch {
  stop(): void;
}

/**
 * Adds the process's runtime metrics to `registry` and keeps them current.
 * `eventLoop: false` leaves out the delay sampling (a cluster primary answers
 * no API request, so its loop's delay would only dilute the servers').
 */
export function watchNodeRuntime(registry: Registry, { eventLoop = true }: { eventLoop?: boolean } = {}): RuntimeWatch {
  // Once per registry: a second app in one process shares the process's figures.
  if (registry.has('nodejs_gc_duration_seconds')) return { stop: () => {} };
  const gcDuration = registry.histogram(
    'nodejs_gc_duration_seconds',
    "Garbage collection pauses of the service's Node processes, by kind: minor (a scavenge of the young generation), major (mark-compact), incremental (a step of incremental marking), weakcb (weak callbacks).",
    ['kind'],
    GC_BUCKETS,
  );
  const resident = registry.gauge(
    'process_resident_memory_bytes',
    "Resident memory of the service's processes (in a Node cluster: the primary and every server process, summed).",
  );
  const residentLargest = registry.gauge(
    'placement_process_resident_memory_max_bytes',
    "Resident memory of the service's largest process.",
    [],
    'max',
  );
  const spaceSize = registry.gauge(
    'nodejs_heap_space_size_bytes',
    "Memory V8 holds for each space of its heap (new_space: the young generation's semi-spaces), summed over the service's processes.",
    ['space'],
  );
  const spaceUsed = registry.gauge(
    'nodejs_heap_space_size_used_bytes',
    "Memory in use by objects in each space of V8's heap, summed over the service's processes.",
    ['space'],
  );
  const external = registry.gauge(
    'nodejs_external_memory_bytes',
    "Memory of objects outside V8's heap that JavaScript holds (buffers among them), summed over the service's processes.",
  );
  registry.onSnapshot(() => {
    const rss = process.memoryUsage.rss();
    resident.set([], rss);
    residentLargest.set([], rss);
    for (const space of getHeapSpaceStatistics()) {
      spaceSize.set([space.space_name], space.space_size);
      spaceUsed.set([space.space_name], space.space_used_size);
    }
    external.set([], process.memoryUsage().external);
  });

  const byKind = new Map<number, ReturnType<typeof gcDuration.labels>>();
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind ?? -1;
      let child = byKind.get(kind);
      if (child === undefined) {
        child = gcDuration.labels(GC_KINDS.get(kind) ?? 'other');
        byKind.set(kind, child);
      }
      child.observe(entry.duration / 1000);
    }
  });
  observer.observe({ entryTypes: ['gc'] });

  let timer: NodeJS.Timeout | undefined;
  if (eventLoop) {
    const delay = registry
      .histogram(
        'nodejs_eventloop_delay_seconds',
        "How late the event loop of the service's server processes ran a timer, sampled every 10 ms: what a request arriving at that moment waited before its process turned to it (behind other answers, a garbage collection).",
        [],
        LOOP_DELAY_BUCKETS,
      )
      .labels();
    let due = performance.now() + LOOP_SAMPLE_MS;
    timer = setInterval(() => {
      const now = performance.now();
      delay.observe(Math.max(0, now - due) / 1000);
      due = now + LOOP_SAMPLE_MS;
    }, LOOP_SAMPLE_MS);
    timer.unref();
  }
  return {
    stop: () => {
      observer.disconnect();
      if (timer) clearInterval(timer);
    },
  };
}
