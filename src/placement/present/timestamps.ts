// Last-modified of a response: the newest of the timestamps involved.

/** Newest of several ISO timestamps (null/undefined ignored). */
export function newest(...stamps: (string | null | undefined)[]): string | null {
  let best: string | null = null;
  for (const s of stamps) if (s && (!best || s > best)) best = s;
  return best;
}
