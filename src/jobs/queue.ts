// JobQueue: where committed work is announced. Node uses an in-process queue
// calling consume(); the Worker uses a Cloudflare Queue whose queue() handler
// calls the same consume(). Either way the outbox drain re-sends anything due,
// so a lost send delays work but never loses it.
import type { JobMessage } from './messages.js';

export interface JobQueue {
  send(msg: JobMessage): Promise<void>;
}

/** No queue: the periodic outbox drain delivers (used until a runtime wires one). */
export const outboxOnlyQueue: JobQueue = { send: async () => {} };

/** The producer side of a Cloudflare Queue binding. */
export interface QueueProducer {
  send(body: JobMessage, options?: { delaySeconds?: number }): Promise<void>;
}

export function cloudflareQueue(producer: QueueProducer): JobQueue {
  return { send: (msg) => producer.send(msg) };
}

/**
 * Runs every sent message through its consumer, one at a time, in the
 * background. It is built before the Deps that hold it, and the consumer
 * (which needs those Deps) attaches with consumeWith(); until then, and after
 * stop(), sends are dropped and the outbox drain delivers them later.
 * `idle()` resolves when nothing is left (tests use it).
 */
export class InProcessQueue implements JobQueue {
  private readonly pending: JobMessage[] = [];
  private running: Promise<void> | undefined;
  private stopped = false;
  private consumer: ((msg: JobMessage) => Promise<unknown>) | undefined;

  constructor(private readonly onError: (err: unknown) => void = () => {}) {}

  consumeWith(consumer: (msg: JobMessage) => Promise<unknown>): void {
    this.consumer = consumer;
    this.stopped = false;
  }

  async send(msg: JobMessage): Promise<void> {
    if (this.stopped || !this.consumer) return;
    this.pending.push(msg);
    this.running ??= this.run();
  }

  private async run(): Promise<void> {
    // Let the sender finish its own work first.
    await Promise.resolve();
    try {
      while (!this.stopped && this.pending.length) {
        const msg = this.pending.shift()!;
        try {
          await this.consumer?.(msg);
        } catch (err) {
          this.onError(err);
        }
      }
    } finally {
      this.running = undefined;
    }
  }

  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  stop(): void {
    this.stopped = true;
    this.pending.length = 0;
  }
}
