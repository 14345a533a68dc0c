// One checkout's candidates engine answering one query over a copy of a
// loaded database, as the route does (findAllocationCandidatesJson, the trees
// kept in memory): what bench/ab-engine.ts times.
import { copyFileSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createClient } from '@libsql/client';

/**
 * A function answering `queryString` at `version` with `root`'s engine over a copy of `dbFile`; it gives the answer's length in bytes.
 * `claimBetween`: before each answer, one unit of VCPU is allocated on the next provider in turn (and the oldest such
 * allocation removed once 50 stand), as a scheduler's claims change one tree's usage between its queries.
 * `vary`: each answer asks one more DISK_GB than the last, in a cycle of 64 (twice the kept answers' count), so no
 * kept answer serves it: every answer is searched, as the first answer after a load is.
 */
export async function engineAnswer(
  checkout: string,
  dbFile: string,
  queryString: string,
  version = '1.36',
  claimBetween = false,
  vary = false,
): Promise<() => Promise<number>> {
  // Imported by path: a relative checkout is the working directory's, not this file's.
  const root = resolve(checkout);
  const copy = join(mkdtempSync(join(tmpdir(), 'engine-answer-')), 'placement.db');
  copyFileSync(dbFile, copy);
  if (existsSync(`${dbFile}-wal`)) copyFileSync(`${dbFile}-wal`, `${copy}-wal`);
  const { clientReader } = await import(`${root}/src/db/client.ts`);
  const { findAllocationCandidatesJson } = await import(`${root}/src/placement/candidates/index.ts`);
  const { candidateEngine } = await import(`${root}/src/compose.ts`);
  const { Microversion } = await import(`${root}/src/http/microversion.ts`);
  const { loadConfig } = await import(`${root}/src/config.ts`);
  const engine = candidateEngine(loadConfig({ PLACEMENT_DB_URL: `file:${copy}` }), undefined);
  const mv = Microversion.parse(version);
  const query = Object.fromEntries([...new URLSearchParams(queryString)].map(([key, value]) => [key, [value]]));
  const resources = query.resources?.[0] ?? '';
  let answers = 0;
  const varied = (): Record<string, string[]> => {
    answers += 1;
    const extra = answers % 64;
    return { ...query, resources: [resources.replace(/DISK_GB:(\d+)/, (_, n) => `DISK_GB:${Number(n) + extra}`)] };
  };
  // Through the server's runner of cached prepared statements where the checkout has one (as node-server reads);
  // @libsql/client's embedded driver prepares every statement anew.
  const runner = existsSync(`${root}/src/db/node-batches.ts`)
    ? (await import(`${root}/src/db/node-batches.ts`)).openBatchRunner(copy, 5000)
    : null;
  const reader = runner ? { readBatch: runner.readBatch.bind(runner) } : clientReader(createClient({ url: `file:${copy}` }));
  // An engine from before it parsed its own query (b80fc36 and older): the parser module's.
  const parseModule = engine.parse ? null : await import(`${root}/src/placement/candidates/parse.ts`);
  const parse = (q: Record<string, string[]>) => (parseModule ? parseModule.parseCandidateRequest(q, mv) : engine.parse(q, mv));
  const writer = createClient({ url: `file:${copy}` });
  let claims = 0;
  const claim = async () => {
    claims += 1;
    await writer.batch(
      [
        {
          sql: `INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
            SELECT i.resource_provider_id, :consumer, i.resource_class_id, 1 FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
            WHERE rc.name = 'VCPU' ORDER BY i.resource_provider_id LIMIT 1 OFFSET :n % (SELECT count(*) FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id WHERE rc.name = 'VCPU')`,
          args: { consumer: `bench-claim-${claims}`, n: claims },
        },
        {
          sql: `DELETE FROM allocations WHERE id = (SELECT min(id) FROM allocations WHERE consumer_id LIKE 'bench-claim-%')
            AND (SELECT count(*) FROM allocations WHERE consumer_id LIKE 'bench-claim-%') > 50`,
          args: {},
        },
      ],
      'write',
    );
  };
  return async (): Promise<number> => {
    if (claimBetween) await claim();
    return (await findAllocationCandidatesJson(reader, parse(vary ? varied() : query), mv, engine.options())).length;
  };
}
