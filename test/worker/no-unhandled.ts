// Every Worker test: a promise rejection nobody handled, or an error nobody
// caught, in the isolate fails the test that was running (vitest's Workers
// pool reports neither). A Worker must handle what it starts: a deployed one
// would log such a rejection as "Uncaught (in promise)", and `wrangler dev`
// shows its user nothing at all.
//
// Not to be confused with workerd's own info lines "uncaught exception;
// source = Uncaught (in promise) ... Network connection lost" that this pool
// prints (it runs workerd with --verbose): workerd writes them for every fetch
// whose connection is refused, even one awaited in a try/catch (bindings.test.ts
// and replica-faults.test.ts point at addresses where nothing listens, on purpose).
import { afterEach, expect } from 'vitest';

type IsolateEvent = { reason?: unknown; error?: unknown; message?: string };
interface Scope {
  addEventListener(type: string, listener: (event: IsolateEvent) => void): void;
  __escapedFromWorker?: string[];
}
const scope = globalThis as unknown as Scope;

// Once per isolate, whichever file evaluates this first.
if (!scope.__escapedFromWorker) {
  const escaped: string[] = [];
  scope.__escapedFromWorker = escaped;
  scope.addEventListener('unhandledrejection', (event) => escaped.push(`unhandled rejection: ${String(event.reason)}`));
  scope.addEventListener('error', (event) => escaped.push(`uncaught error: ${String(event.error ?? event.message)}`));
}

afterEach(() => {
  const escaped = scope.__escapedFromWorker!.splice(0);
  expect(escaped, 'rejections or errors nobody handled in the isolate').toEqual([]);
});
