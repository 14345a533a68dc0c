// How long one search may run before it answers with what it found, and how
// it shares the event loop meanwhile: the candidates' search (search.ts
// RequestPicker) and headroom's walk (src/ext/headroom) take the same budget.
/** How long a search runs before it gives the event loop back, so one pathological request cannot stall the others. */
const SLICE_MS = 50;

/** setTimeout(0) exists in Node and in Workers alike (setImmediate does not). */
const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

export class TimeBudget {
  private readonly deadline: number;
  private sliceStart: number;

  /** `ms` 0 or absent: no limit. */
  constructor(
    ms = 0,
    private readonly clock: () => number = Date.now,
  ) {
    const now = clock();
    this.deadline = ms > 0 ? now + ms : Number.POSITIVE_INFINITY;
    this.sliceStart = now;
  }

  /**
   * Between two steps of a search, synchronously (a search takes thousands of
   * steps, and an await at each one costs a turn of the microtask queue):
   * 'spent' when the budget is spent (the search answers with what it has),
   * 'pause' when a slice has run and the caller gives the event loop back
   * (`await budget.pause()`) before its next step, 'go' otherwise.
   */
  step(): 'go' | 'pause' | 'spent' {
    const now = this.clock();
    if (now >= this.deadline) return 'spent';
    return now - this.sliceStart >= SLICE_MS ? 'pause' : 'go';
  }

  /** Gives the event loop back; the next slice starts when it returns. */
  async pause(): Promise<void> {
    await yieldToEventLoop();
    this.sliceStart = this.clock();
  }

  /** step() and pause() in one, for a caller whose steps are few: true when the budget is spent. */
  async spent(): Promise<boolean> {
    const step = this.step();
    if (step === 'pause') await this.pause();
    return step === 'spent';
  }
}
