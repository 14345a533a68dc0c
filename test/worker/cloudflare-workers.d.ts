// The workerd modules these tests import; typed narrowly here so the
// project's tsconfig needs no Workers globals (which clash with Node's).
declare module 'cloudflare:workers' {
  export const exports: unknown;
  export const env: unknown;
}

// @cloudflare/vitest-pool-workers' helpers for calling a module's handlers as workerd does.
declare module 'cloudflare:test' {
  import type { ExecutionContext, ScheduledController } from '@cloudflare/workers-types/index';
  export function createExecutionContext(): ExecutionContext;
  export function waitOnExecutionContext(ctx: ExecutionContext): Promise<void>;
  export function createScheduledController(options?: { scheduledTime?: number; cron?: string }): ScheduledController;
}
