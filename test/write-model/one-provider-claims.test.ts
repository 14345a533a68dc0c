// Many claims on one provider at once, through the API, with and without group
// commit (db/group-commit.ts): every claim fits, so every claim is granted.
// Losers of a race take turns (withRaceRetries, db/write-batch.ts) instead of
// racing each other again until some run out of attempts and answer 409; the
// store-level case that fails without the turns is in
// test/db/group-commit-differential.test.ts (contention), and claims drawn
// from a hold in test/ext/holds-claims.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const CLAIMS = 128;
const PROJECT = '33333333-0000-4000-8000-000000000003';

let t: TestApp | undefined;
afterEach(() => t?.close());

describe.each(['true', 'false'])('concurrent claims on one provider (PLACEMENT_GROUP_COMMIT=%s)', (groupCommit) => {
  it(`grants all ${CLAIMS} claims that fit, and the usage is their sum`, async () => {
    t = await makeTestApp({ PLACEMENT_GROUP_COMMIT: groupCommit });
    const app = t;
    const rp = await provider(app, { inventory: { VCPU: { total: CLAIMS * 2 } } });
    const answers = await Promise.all(
      Array.from({ length: CLAIMS }, () =>
        app.call('PUT', `/allocations/${crypto.randomUUID()}`, {
          body: {
            allocations: { [rp]: { resources: { VCPU: 2 } } },
            project_id: PROJECT,
            user_id: PROJECT,
            consumer_generation: null,
            consumer_type: 'INSTANCE',
          },
        }),
      ),
    );
    expect(answers.map((res) => res.status)).toEqual(Array(CLAIMS).fill(204));
    const usages = await app.call('GET', `/resource_providers/${rp}/usages`);
    expect(((await usages.json()) as { usages: Record<string, number> }).usages.VCPU).toBe(CLAIMS * 2);
  }, 120_000);
});
