/** mulberry32: a small seeded PRNG in [0, 1), the same on every run, so a failing seed replays exactly. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The random choices the generators of the differential and property tests make, all from one stream. */
export interface Random {
  /** The stream itself, in [0, 1). */
  next: () => number;
  /** A whole number in [0, n). */
  below: (n: number) => number;
  /** A whole number in [lo, hi], both included. */
  int: (lo: number, hi: number) => number;
  pick: <T>(list: readonly T[]) => T;
  chance: (p: number) => boolean;
  /** One to `max` distinct elements of `list`, in a shuffled order. */
  some: <T>(list: readonly T[], max: number) => T[];
  /** A v4-shaped uuid from the stream (one draw per hex digit): a failing seed builds the same cloud again, uuid order included. */
  uuid: () => ReturnType<typeof crypto.randomUUID>;
}

/**
 * Generators over a seed (a fresh mulberry32) or over a stream a test already draws from. Each
 * draws exactly one number from the stream per call (`some`: one for its count, then its shuffle),
 * so a seed replays the same cases whichever helper a test was written with.
 */
export function random(seedOrStream: number | (() => number)): Random {
  const next = typeof seedOrStream === 'number' ? mulberry32(seedOrStream) : seedOrStream;
  const below = (n: number) => Math.floor(next() * n);
  const int = (lo: number, hi: number) => lo + below(hi - lo + 1);
  const pick = <T>(list: readonly T[]): T => list[below(list.length)]!;
  const chance = (p: number) => next() < p;
  const some = <T>(list: readonly T[], max: number): T[] => {
    const n = int(1, Math.min(max, list.length));
    return [...list].sort(() => next() - 0.5).slice(0, n);
  };
  const hex = (n: number) => Array.from({ length: n }, () => below(16).toString(16)).join('');
  const uuid = (): ReturnType<typeof crypto.randomUUID> => `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[below(4)]}${hex(3)}-${hex(12)}`;
  return { next, below, int, pick, chance, some, uuid };
}
