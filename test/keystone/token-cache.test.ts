// The validated-token cache on its own (src/http/keystone/token-cache.ts),
// on a clock the test moves: an entry lives until the earlier of the cache
// time and the token's expiry (to the millisecond), refused tokens too, the
// least recently used leaves first when full, and a cache of size 0 or time 0
// keeps nothing. Digests are SHA-256 in hex.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { TokenIdentity } from '../../src/http/keystone/client.js';
import { TokenCache, tokenDigest, type Verdict } from '../../src/http/keystone/token-cache.js';

const identity = (expiresAt: number): TokenIdentity => ({
  userId: 'u',
  userDomainId: 'default',
  projectId: 'p',
  projectDomainId: 'default',
  domainId: null,
  systemScope: null,
  roles: ['member'],
  expiresAt,
});
const valid = (expiresAt: number): Verdict => ({ valid: true, identity: identity(expiresAt) });
const REFUSED: Verdict = { valid: false };

describe('TokenCache', () => {
  it('keeps an entry until the cache time, to the millisecond', () => {
    const clock = { now: 1_000 };
    const cache = new TokenCache(500, 10, () => clock.now);
    cache.set('a', valid(1_000_000));
    cache.set('r', REFUSED);
    clock.now = 1_499;
    expect(cache.get('a')).toEqual(valid(1_000_000));
    expect(cache.get('r')).toEqual(REFUSED);
    clock.now = 1_500;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('r')).toBeUndefined();
    expect(cache.size).toBe(0); // an expired entry is dropped when looked up
  });

  it('keeps a valid token no longer than it lives, and not at all once it has expired', () => {
    const clock = { now: 1_000 };
    const cache = new TokenCache(60_000, 10, () => clock.now);
    cache.set('short', valid(1_200));
    clock.now = 1_199;
    expect(cache.get('short')).toBeDefined();
    clock.now = 1_200;
    expect(cache.get('short')).toBeUndefined();
    cache.set('dead', valid(1_200)); // expires now: not kept
    cache.set('older', valid(1_000));
    expect(cache.size).toBe(0);
  });

  it('lets the least recently used entry go first when full; a hit makes an entry recent', () => {
    const clock = { now: 0 };
    const cache = new TokenCache(60_000, 2, () => clock.now);
    cache.set('a', REFUSED);
    cache.set('b', REFUSED);
    expect(cache.get('a')).toEqual(REFUSED); // a is now the most recent
    cache.set('c', REFUSED);
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toEqual(REFUSED);
    expect(cache.get('c')).toEqual(REFUSED);
    // Setting an entry again replaces it and makes it recent, without growing the cache.
    cache.set('a', valid(60_000));
    cache.set('d', REFUSED);
    expect(cache.size).toBe(2);
    expect(cache.get('c')).toBeUndefined();
    expect(cache.get('a')).toEqual(valid(60_000));
  });

  it('keeps nothing with a cache time or a size of 0', () => {
    for (const [ms, size] of [
      [0, 10],
      [60_000, 0],
    ] as const) {
      const cache = new TokenCache(ms, size, () => 0);
      cache.set('a', REFUSED);
      expect(cache.size, `${ms} ms, ${size} entries`).toBe(0);
      expect(cache.get('a')).toBeUndefined();
    }
  });
});

describe('tokenDigest', () => {
  it('is the SHA-256 of the token in lower-case hex', async () => {
    for (const token of ['', 'gAAAAABm-token', 'ü']) {
      expect(await tokenDigest(token)).toBe(createHash('sha256').update(token).digest('hex'));
    }
    expect(await tokenDigest('a')).toMatch(/^[0-9a-f]{64}$/);
  });
});
