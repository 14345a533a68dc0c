// What the job runner knows of the work it runs: a handler per outbox topic and
// the periodic sweeps, contributed by the modules that own the work (today the
// accelerator API, src/cyborg/jobs.ts). jobs/ imports no such module; the
// composition root (src/compose.ts) hands the registry to the runner via Deps.
import type { Deps } from '../deps.js';
import type { JobTopic } from './messages.js';
import type { OutboxRow } from './outbox.js';

export type ConsumeResult = { outcome: 'done' | 'skipped' | 'dead' } | { outcome: 'retry'; delayMs: number };

/** Runs the work of one claimed outbox row and records its outcome on the row. */
export type JobHandler = (deps: Deps, row: OutboxRow) => Promise<ConsumeResult>;

/** Periodic work; returns how many items it handled. */
export type Sweep = (deps: Deps) => Promise<number>;

export interface JobModule {
  handlers: Partial<Record<JobTopic, JobHandler>>;
  sweeps: Sweep[];
}

export class JobRegistry {
  private readonly handlers = new Map<JobTopic, JobHandler>();
  readonly sweeps: readonly Sweep[];

  constructor(modules: JobModule[]) {
    for (const module of modules) {
      for (const [topic, handler] of Object.entries(module.handlers) as [JobTopic, JobHandler][]) {
        if (this.handlers.has(topic)) throw new Error(`two job handlers for topic ${topic}`);
        this.handlers.set(topic, handler);
      }
    }
    // A sweep several modules install (work they share) runs once.
    this.sweeps = [...new Set(modules.flatMap((m) => m.sweeps))];
  }

  handlerFor(topic: JobTopic): JobHandler | undefined {
    return this.handlers.get(topic);
  }
}
