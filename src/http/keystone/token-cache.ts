// Validated tokens, remembered as keystonemiddleware's token cache does: keyed
// by the token's SHA-256 digest (a memory dump holds no usable token), each
// until the earlier of its expiry and the cache time, at most `maxEntries`
// (least recently used leave first). Refused tokens are remembered too, so a
// client retrying a bad token does not cost a Keystone call each time.
import type { TokenIdentity } from './client.js';

export type Verdict = { valid: true; identity: TokenIdentity } | { valid: false };

interface Entry {
  verdict: Verdict;
  /** ms since the epoch after which the entry is not used. */
  until: number;
}

export async function tokenDigest(token: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token)));
  let hex = '';
  for (const byte of digest) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

export class TokenCache {
  // A Map iterates in insertion order: re-inserting on a hit keeps the least recently used first.
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly cacheMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(digest: string): Verdict | undefined {
    const entry = this.entries.get(digest);
    if (!entry) return undefined;
    this.entries.delete(digest);
    if (entry.until <= this.now()) return undefined;
    this.entries.set(digest, entry);
    return entry.verdict;
  }

  set(digest: string, verdict: Verdict): void {
    // A cache time of 0 keeps nothing (`until` is not after now); a size of 0 keeps nothing (the loop below).
    const now = this.now();
    const until = Math.min(now + this.cacheMs, verdict.valid ? verdict.identity.expiresAt : Number.POSITIVE_INFINITY);
    if (until <= now) return;
    this.entries.delete(digest);
    this.entries.set(digest, { verdict, until });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }
}
