// Worker mode with a replica that is down (nothing listens at its URL) or
// slower than PLACEMENT_DB_READ_TIMEOUT_MS (a proxy holds its reads 1.5 s),
// inside workerd: candidates come from the primary, equal to an instance
// without a replica and including this isolate's own writes, and the
// fallback is logged once and counted. Nothing escapes: no unhandled
// rejection or uncaught error reaches the isolate (test/worker/no-unhandled.ts
// fails the test on one; it also explains workerd's "uncaught exception ...
// Network connection lost" info lines that the refused replica causes).
import { describe, expect, inject, it } from 'vitest';
import type { Logger } from '../../src/deps.js';
import { instanceClaim, usedIn } from '../helpers/claims.js';
import { replicaIsolate } from './replica-isolate.js';

/** An isolate's app on the shared primary; with `readUrl`, reading from that replica. */
async function isolate(readUrl?: string) {
  const warnings: string[] = [];
  const log: Logger = { debug() {}, info() {}, warn: (msg) => warnings.push(msg), error() {} };
  const env: Record<string, string> = readUrl
    ? { PLACEMENT_DB_READ_URL: readUrl, PLACEMENT_DB_READ_TIMEOUT_MS: '300', PLACEMENT_DB_READ_RETRY_MS: '60000' }
    : {};
  return { ...(await replicaIsolate(env, log)), warnings };
}

describe('Worker: a replica that is down or too slow', () => {
  for (const [name, url] of [
    ['down', () => 'http://127.0.0.1:1'],
    ['slower than the timeout', () => inject('slowReplicaUrl')],
  ] as const) {
    it(`${name}: the primary answers, own writes included, one warning`, async () => {
      const exact = await isolate();
      const faulty = await isolate(url());
      const rp = crypto.randomUUID();
      expect((await faulty.call('POST', '/resource_providers', { name: `rp-${rp}`, uuid: rp })).status).toBe(200);
      const inventory = { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } };
      expect((await faulty.call('PUT', `/resource_providers/${rp}/inventories`, inventory)).status).toBe(200);
      const query = `/allocation_candidates?resources=VCPU:1&in_tree=${rp}`;
      const started = Date.now();
      const first = await faulty.call('GET', query);
      const waited = Date.now() - started;
      expect(first.status).toBe(200);
      expect(await first.json()).toEqual(await (await exact.call('GET', query)).json());
      expect(waited).toBeLessThan(1_500); // gave up at the timeout, not when the slow replica would answer
      for (let i = 0; i < 3; i += 1) {
        const claim = await faulty.call('PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(rp, { VCPU: 1 }));
        expect(claim.status).toBe(204);
        expect(usedIn(await (await faulty.call('GET', query)).json(), rp, 'VCPU')).toBe(i + 1);
      }
      expect(faulty.store.replica!.counts).toMatchObject({ replica: 0, unavailable: 4 });
      expect(faulty.warnings).toEqual(['read replica failed: reading from the primary']);
      faulty.store.close();
      exact.store.close();
      // libSQL's HTTP streams close in the background (a last request to the replica): let them
      // settle before the test ends and no-unhandled.ts looks for what escaped.
      await new Promise((resolve) => setTimeout(resolve, 400));
    });
  }
});
