// The reaper (docs/preemption.md "A reaper for OpenStack"): it reads the
// events stream (GET /ext/events?kind=preemption, a long poll), deletes each
// preemption's victims through Nova within their grace, and once they are all
// gone (their allocations released: Nova's own DELETE /allocations, or the
// lease sweep at the grace's end) removes the nomination, so the preemptor's
// boot, through Nova unchanged, finds the capacity (Nova cannot claim with
// ext_hold). It remembers the last event handled and the preemptions under
// way in a state file; after a restart it reads those again from placement
// (GET /ext/preemptions/{id}, the victims' allocations, the hold): deleting a
// server twice is harmless (Nova answers 404 or 204), so nothing is lost.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as z from 'zod';
import { PlacementError, type PlacementClient, ServiceUnavailableError } from '../report/client.js';
import { NovaRefused, type NovaServers, NovaUnavailable } from './nova.js';

/** What the reaper writes to its log, one JSON object a line. */
export type ReaperLogEntry = Record<string, unknown> & { action: string };

export interface ReaperOptions {
  placement: PlacementClient;
  nova: NovaServers;
  stateFile: string;
  waitSeconds: number;
  releaseNominations: boolean;
  log: (entry: ReaperLogEntry) => void;
  warn: (message: string) => void;
  now?: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  signal?: AbortSignal;
  /** Return once nothing is under way and no event is waiting (instead of running until stopped). */
  once?: boolean;
}

const PreemptionBody = z.object({
  preemption_id: z.string(),
  hold_uuid: z.string(),
  victims_leased_until: z.string(),
  victims: z.array(z.object({ consumer_uuid: z.string() })),
});
const EventPage = z.object({
  events: z.array(z.object({ seq: z.number(), kind: z.string(), body: z.record(z.string(), z.unknown()) })),
  next_after: z.number(),
  missed: z.boolean(),
});
const PreemptionView = z.object({
  id: z.string(),
  hold_uuid: z.string(),
  victims_leased_until: z.string(),
  victims: z.array(z.object({ consumer_uuid: z.string() })),
});
const SavedState = z.object({ after: z.number().int().min(0), pending: z.array(z.string()) });

interface Victim {
  server: string;
  /** Nova accepted the delete (or had no such server). */
  deleteAsked: boolean;
  /** Nova refused it: left to the lease sweep. */
  refused: boolean;
  /** Its allocations are gone. */
  released: boolean;
}

interface UnderWay {
  id: string;
  hold: string;
  leasedUntilMs: number;
  victims: Victim[];
  graceOverLogged: boolean;
}

/** How long a read waits while a delete is to be tried again (Nova was down). */
const RETRY_SECONDS = 2;

export class Reaper {
  private after = 0;
  private readonly underWay = new Map<string, UnderWay>();
  private readonly now: () => number;

  constructor(private readonly options: ReaperOptions) {
    this.now = options.now ?? (() => Date.now());
  }

  /** Runs until stopped (or, with `once`, until nothing is left to do); 0 when stopped cleanly. */
  async run(): Promise<number> {
    const { signal } = this.options;
    let failures = 0;
    // Placement may be down at the start too: the preemptions under way are read once it answers.
    for (;;) {
      try {
        await this.restore();
        break;
      } catch (err) {
        if (!(err instanceof ServiceUnavailableError)) throw err;
        if (signal?.aborted) return 0;
        failures += 1;
        this.options.warn(`placement unavailable (${err.message}); trying again`);
        await this.options.sleep(Math.min(30_000, 1000 * 2 ** (failures - 1)), signal);
        this.underWay.clear();
      }
    }
    while (!signal?.aborted) {
      let page: z.infer<typeof EventPage>;
      try {
        await this.act();
        this.save();
        const retrying = [...this.underWay.values()].some((p) => p.victims.some((v) => !v.deleteAsked && !v.refused && !v.released));
        const wait = this.options.once || retrying ? Math.min(RETRY_SECONDS, this.options.waitSeconds) : this.options.waitSeconds;
        const { body } = await this.options.placement.request(
          'GET',
          `/ext/events?after=${this.after}&kind=preemption&wait=${wait}&limit=100`,
          undefined,
          signal,
        );
        page = EventPage.parse(body);
        failures = 0;
      } catch (err) {
        if (!(err instanceof ServiceUnavailableError)) throw err;
        if (signal?.aborted) break;
        failures += 1;
        this.options.warn(`placement unavailable (${err.message}); trying again`);
        await this.options.sleep(Math.min(30_000, 1000 * 2 ** (failures - 1)), signal);
        continue;
      }
      if (page.missed)
        this.options.warn(
          `events after ${this.after} were removed before they were read (retention): preemptions made meanwhile are not reaped`,
        );
      for (const event of page.events) this.apply(event.kind, event.body);
      this.after = page.next_after;
      if (this.options.once && page.events.length === 0 && this.underWay.size === 0) {
        this.save();
        return 0;
      }
    }
    this.save();
    return 0;
  }

  private apply(kind: string, body: Record<string, unknown>): void {
    const id = typeof body.preemption_id === 'string' ? body.preemption_id : undefined;
    if (!id) return;
    if (kind === 'preemption.created') {
      const made = PreemptionBody.parse(body);
      if (this.underWay.has(id)) return;
      this.track(
        id,
        made.hold_uuid,
        made.victims_leased_until,
        made.victims.map((v) => v.consumer_uuid),
      );
      this.options.log({
        action: 'preemption',
        preemption: id,
        victims: made.victims.map((v) => v.consumer_uuid),
        leased_until: made.victims_leased_until,
      });
    } else if (kind === 'preemption.victim_released') {
      const victim = this.underWay.get(id)?.victims.find((v) => v.server === body.consumer_uuid);
      if (victim && !victim.released) {
        victim.released = true;
        this.options.log({ action: 'victim_released', preemption: id, server: victim.server });
      }
    } else if (kind === 'preemption.nomination_drawn' || kind === 'preemption.nomination_lapsed') {
      // The preemptor claimed it, or it ended: nothing is left to do for this preemption.
      if (this.underWay.delete(id)) this.options.log({ action: 'done', preemption: id, because: kind.slice('preemption.'.length) });
    }
  }

  private track(
    id: string,
    hold: string,
    leasedUntil: string,
    servers: string[],
    released: (server: string) => boolean = () => false,
  ): void {
    this.underWay.set(id, {
      id,
      hold,
      leasedUntilMs: Date.parse(leasedUntil),
      victims: servers.map((server) => ({ server, deleteAsked: false, refused: false, released: released(server) })),
      graceOverLogged: false,
    });
  }

  /** Deletes what is to be deleted, and removes the nominations whose victims are all gone. */
  private async act(): Promise<void> {
    for (const p of [...this.underWay.values()]) {
      for (const v of p.victims) {
        if (v.deleteAsked || v.refused || v.released) continue;
        try {
          const result = await this.options.nova.delete(v.server);
          v.deleteAsked = true;
          this.options.log({
            action: 'delete_server',
            preemption: p.id,
            server: v.server,
            result,
            within_grace: this.now() <= p.leasedUntilMs,
          });
        } catch (err) {
          if (err instanceof NovaRefused) {
            v.refused = true;
            this.options.warn(
              `server ${v.server} (preemption ${p.id}): ${err.message}; its allocations are released by the lease sweep at the grace's end`,
            );
          } else if (err instanceof NovaUnavailable) {
            this.options.warn(`server ${v.server} (preemption ${p.id}): ${err.message}; trying again`);
          } else throw err;
        }
      }
      if (!p.graceOverLogged && this.now() > p.leasedUntilMs && p.victims.some((v) => !v.released)) {
        p.graceOverLogged = true;
        this.options.log({ action: 'grace_over', preemption: p.id, servers: p.victims.filter((v) => !v.released).map((v) => v.server) });
      }
      if (p.victims.every((v) => v.released)) {
        if (this.options.releaseNominations) {
          try {
            await this.options.placement.request('DELETE', `/ext/holds/${p.hold}`);
          } catch (err) {
            if (!(err instanceof PlacementError && err.status === 404)) throw err;
          }
          this.options.log({ action: 'nomination_released', preemption: p.id, hold: p.hold });
        }
        this.underWay.delete(p.id);
        this.options.log({
          action: 'done',
          preemption: p.id,
          because: this.options.releaseNominations ? 'nomination_released' : 'victims_gone',
        });
      }
    }
  }

  /** The last event handled and the preemptions under way, as saved; those read again from placement. */
  private async restore(): Promise<void> {
    let saved: z.infer<typeof SavedState>;
    try {
      saved = SavedState.parse(JSON.parse(readFileSync(this.options.stateFile, 'utf8')));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.options.warn(`state file ${this.options.stateFile} unreadable (${(err as Error).message}): starting from the oldest event`);
      return;
    }
    this.after = saved.after;
    for (const id of saved.pending) {
      let view: z.infer<typeof PreemptionView>;
      try {
        view = PreemptionView.parse((await this.options.placement.request('GET', `/ext/preemptions/${id}`)).body);
      } catch (err) {
        if (err instanceof PlacementError && err.status === 404) continue;
        throw err;
      }
      try {
        await this.options.placement.request('GET', `/ext/holds/${view.hold_uuid}`);
      } catch (err) {
        // The nomination ended meanwhile: drawn or lapsed, nothing left to do.
        if (err instanceof PlacementError && err.status === 404) continue;
        throw err;
      }
      const released = new Set<string>();
      for (const v of view.victims) {
        const { body } = await this.options.placement.request<{ allocations: Record<string, unknown> }>(
          'GET',
          `/allocations/${v.consumer_uuid}`,
        );
        if (Object.keys(body.allocations).length === 0) released.add(v.consumer_uuid);
      }
      this.track(
        id,
        view.hold_uuid,
        view.victims_leased_until,
        view.victims.map((v) => v.consumer_uuid),
        (s) => released.has(s),
      );
      this.options.log({ action: 'resumed', preemption: id, released: [...released] });
    }
  }

  /** Written whole, then renamed over the old one: a crash leaves one or the other. */
  private save(): void {
    const tmp = `${this.options.stateFile}.tmp`;
    writeFileSync(tmp, JSON.stringify({ after: this.after, pending: [...this.underWay.keys()] }));
    renameSync(tmp, this.options.stateFile);
  }
}
