// Waiting for something a test can observe, bounded by the clock rather than by a
// count of polls: on a loaded CI machine (2 cores, load 12-18) each poll takes
// longer, and 100 polls of 10 ms gave up long before the thing awaited was late.

/**
 * Resolves once `check` holds; throws, naming `what` was awaited, when it still does
 * not after `withinMs` (generous: 20 s by default, several hundred times the idle figure
 * of what the suite awaits). Runs in workerd too (Date.now advances across the awaits).
 */
export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, withinMs = 20_000, everyMs = 10): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() >= deadline) throw new Error(`gave up after ${withinMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
