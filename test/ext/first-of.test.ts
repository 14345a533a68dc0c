// ext_first_of (docs/extensions-gpu.md): prioritized alternatives among granular groups,
// per tree. "An H100, else an A100, else a T4" on a cloud mixing them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { countOf, headroom } from './helpers.js';
import { ensureClasses } from './mig-h100.js';

let app: TestApp;

interface Answer {
  allocation_requests: { allocations: Record<string, { resources: Record<string, number> }>; mappings?: Record<string, string[]> }[];
}

const GPUS = ['CUSTOM_GPU_H100', 'CUSTOM_GPU_A100', 'CUSTOM_GPU_T4'];
const ASK =
  'resources=VCPU:4&resources_H100=CUSTOM_GPU_H100:1&resources_A100=CUSTOM_GPU_A100:1&resources_T4=CUSTOM_GPU_T4:1' +
  '&group_policy=none&ext_first_of=_H100,_A100,_T4';

/** A compute node with one child GPU provider per class given: the root's uuid and the GPUs'. */
async function host(gpus: string[]): Promise<{ root: string; gpu: Record<string, string> }> {
  const root = await provider(app, { inventory: { VCPU: { total: 16 } } });
  const gpu: Record<string, string> = {};
  for (const rc of gpus) gpu[rc] = await provider(app, { parent: root, inventory: { [rc]: { total: 1 } } });
  return { root, gpu };
}

async function candidates(query: string, version = 'latest'): Promise<Answer> {
  const res = await app.call('GET', `/allocation_candidates?${query}`, { version });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Answer;
}

describe.each([
  ['trees in memory', '20000'],
  ['SQL alone', '0'],
])('ext_first_of (%s)', (_engine, cache) => {
  let h100: Awaited<ReturnType<typeof host>>;
  let a100: Awaited<ReturnType<typeof host>>;
  let t4: Awaited<ReturnType<typeof host>>;
  let mixed: Awaited<ReturnType<typeof host>>;
  let none: Awaited<ReturnType<typeof host>>;

  beforeAll(async () => {
    app = await makeTestApp({ PLACEMENT_CANDIDATE_TREE_CACHE: cache });
    await ensureClasses(app, GPUS);
    h100 = await host(['CUSTOM_GPU_H100']);
    a100 = await host(['CUSTOM_GPU_A100']);
    t4 = await host(['CUSTOM_GPU_T4']);
    mixed = await host(['CUSTOM_GPU_T4', 'CUSTOM_GPU_A100', 'CUSTOM_GPU_H100']);
    none = await host([]);
  });
  afterAll(() => app.close());

  it('an H100, else an A100, else a T4: each host offers its best GPU, and mappings name the alternative used', async () => {
    const answer = await candidates(ASK);
    const byRoot = new Map<string, { suffixes: string[]; gpus: string[] }[]>();
    for (const request of answer.allocation_requests) {
      const mappings = request.mappings!;
      const root = mappings['']![0]!;
      const gpus = Object.values(request.allocations).flatMap((a) => Object.keys(a.resources).filter((rc) => GPUS.includes(rc)));
      byRoot.set(root, [...(byRoot.get(root) ?? []), { suffixes: Object.keys(mappings).sort(), gpus }]);
    }
    expect(byRoot.get(h100.root)).toEqual([{ suffixes: ['', '_H100'], gpus: ['CUSTOM_GPU_H100'] }]);
    expect(byRoot.get(a100.root)).toEqual([{ suffixes: ['', '_A100'], gpus: ['CUSTOM_GPU_A100'] }]);
    expect(byRoot.get(t4.root)).toEqual([{ suffixes: ['', '_T4'], gpus: ['CUSTOM_GPU_T4'] }]);
    // The host with all three: only the H100, the later alternatives ignored there.
    expect(byRoot.get(mixed.root)).toEqual([{ suffixes: ['', '_H100'], gpus: ['CUSTOM_GPU_H100'] }]);
    expect(byRoot.has(none.root)).toBe(false);
    expect(answer.allocation_requests).toHaveLength(4);
  });

  it('a used H100 falls back to the next alternative on that host only', async () => {
    const consumer = crypto.randomUUID();
    const claimed = await app.call('PUT', `/allocations/${consumer}`, {
      body: {
        allocations: { [mixed.gpu.CUSTOM_GPU_H100!]: { resources: { CUSTOM_GPU_H100: 1 } } },
        project_id: crypto.randomUUID(),
        user_id: crypto.randomUUID(),
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(claimed.status).toBe(204);
    const answer = await candidates(ASK);
    const onMixed = answer.allocation_requests.filter((r) => r.mappings![''][0] === mixed.root);
    expect(onMixed.map((r) => Object.keys(r.mappings!).sort())).toEqual([['', '_A100']]);
    expect(answer.allocation_requests.some((r) => r.mappings!['']![0] === h100.root && r.mappings!._H100)).toBe(true);
    expect((await app.call('DELETE', `/allocations/${consumer}`)).status).toBe(204);
  });

  it('several ext_first_of are independent choices; limit counts the answer', async () => {
    const answer = await candidates(
      'resources_V=VCPU:4&resources_V2=VCPU:2&resources_H100=CUSTOM_GPU_H100:1&resources_T4=CUSTOM_GPU_T4:1' +
        '&group_policy=none&ext_first_of=_V,_V2&ext_first_of=_T4,_H100&same_subtree=_V,_V2',
    );
    for (const request of answer.allocation_requests) {
      const suffixes = Object.keys(request.mappings!).sort();
      expect(suffixes).toContain('_V');
      expect(suffixes.filter((s) => s === '_T4' || s === '_H100')).toHaveLength(1);
    }
    // The mixed host prefers its T4.
    expect(answer.allocation_requests.filter((r) => r.mappings!._T4).length).toBe(2);
    expect((await candidates(`${ASK}&limit=2`)).allocation_requests).toHaveLength(2);
  });

  it('without ext_first_of the three groups must all fit: only the mixed host', async () => {
    const answer = await candidates(ASK.replace('&ext_first_of=_H100,_A100,_T4', ''));
    expect(answer.allocation_requests.map((r) => r.mappings!['']![0])).toEqual([mixed.root]);
  });

  it('numbered groups before 1.33 work the same', async () => {
    const answer = await candidates(
      'resources=VCPU:4&resources1=CUSTOM_GPU_H100:1&resources2=CUSTOM_GPU_A100:1&group_policy=none&ext_first_of=1,2',
      '1.29',
    );
    expect(answer.allocation_requests).toHaveLength(3);
  });

  it('refuses a bad suffix as upstream words same_subtree, the unsuffixed group, a repeat, and any microversion below 1.25', async () => {
    const unknown = await app.call('GET', `/allocation_candidates?${ASK.replace('_H100,_A100', '_H100,_X')}`);
    expect(unknown.status).toBe(400);
    const error = await errorOf(unknown);
    expect(error.detail).toContain("Real suffixes should be specified in `ext_first_of`: ['_X'] not found in");
    expect(error.code).toBe('placement.query.bad_value');
    const unsuffixed = await app.call('GET', `/allocation_candidates?${ASK},`);
    expect(unsuffixed.status).toBe(400);
    expect((await errorOf(unsuffixed)).detail).toContain('Empty string (unsuffixed group) can not be specified in `ext_first_of`');
    const repeated = await app.call('GET', `/allocation_candidates?${ASK}&ext_first_of=_H100,_A100`);
    expect(repeated.status).toBe(400);
    const old = await app.call('GET', '/allocation_candidates?resources=VCPU:1&ext_first_of=1', { version: '1.24' });
    expect(old.status).toBe(400);
    expect((await errorOf(old)).detail).toContain("Additional properties are not allowed ('ext_first_of' was unexpected)");
  });

  it('words every refusal exactly, trims spaces, and caps the combinations at 64', async () => {
    const refusal = async (query: string) => {
      const res = await app.call('GET', `/allocation_candidates?${query}`);
      expect(res.status, query).toBe(400);
      return errorOf(res);
    };
    const base = ASK.replace('&ext_first_of=_H100,_A100,_T4', '');
    expect((await candidates(`${base}&ext_first_of=_H100, _A100 ,_T4`)).allocation_requests.length).toBeGreaterThan(0);
    for (const query of [`${base}&ext_first_of=_H100,,_T4`, `${base}&ext_first_of=_H100,_X`, `${base}&ext_first_of=_H100,_H100`]) {
      expect((await refusal(query)).code, query).toBe('placement.query.bad_value');
    }
    expect((await refusal(`${base}&ext_first_of=_H100,_X,_Y`)).detail).toContain(
      "Real suffixes should be specified in `ext_first_of`: ['_X', '_Y'] not found in ['', '_H100', '_A100', '_T4'].",
    );
    // Repeated in one list, or across lists: named once each.
    expect((await refusal(`${base}&ext_first_of=_H100,_A100,_H100,_A100`)).detail).toContain(
      "A group may be named once in `ext_first_of`: ['_H100', '_A100'].",
    );
    expect((await refusal(`${base}&ext_first_of=_H100,_A100&ext_first_of=_T4,_A100`)).detail).toContain(
      "A group may be named once in `ext_first_of`: ['_A100'].",
    );
    // 4 x 4 x 4 = 64 combinations are accepted, 4 x 4 x 5 = 80 are not.
    const groups = (lists: number[]) => {
      const names = lists.map((n, l) => Array.from({ length: n }, (_, i) => `_L${l}G${i}`));
      const resources = names.flat().map((s) => `resources${s}=VCPU:1`);
      return `${resources.join('&')}&group_policy=none&${names.map((list) => `ext_first_of=${list.join(',')}`).join('&')}`;
    };
    expect((await app.call('GET', `/allocation_candidates?${groups([4, 4, 4])}`)).status).toBe(200);
    const capped = await refusal(groups([4, 4, 5]));
    expect(capped.detail).toContain('`ext_first_of` may combine at most 64 alternatives; these lists combine 80.');
    expect(capped.code).toBe('placement.query.bad_value');
  });

  it('headroom counts, per host, the claims of the best alternative that fits there', async () => {
    const body = await headroom(app, ASK);
    // One claim on a host with one GPU, whichever alternative it is; three on the mixed host (its H100, then
    // its A100, then its T4); none on the host without a GPU.
    for (const host of [h100, a100, t4]) expect(countOf(body, host.root)).toBe(1);
    expect(countOf(body, mixed.root)).toBe(3);
    expect(countOf(body, none.root)).toBe(0);
  });

  it('the why-no-host diagnosis takes ext_first_of', async () => {
    const res = await app.call('GET', `/diagnostics/allocation_candidates?${ASK}&host=${none.root}`);
    expect(res.status).toBe(200);
    const diagnosis = (await res.json()) as { allocation_requests: number; hosts: { fits: boolean }[] };
    expect(diagnosis.allocation_requests).toBe(4);
    expect(diagnosis.hosts[0]!.fits).toBe(false);
  });

  it("a provider shared through a host's aggregate serves the unsuffixed group beside the alternative chosen there", async () => {
    // Without the tree cache the shared provider's own tree is not among the first loaded (it
    // anchors nothing): the search takes it in afterwards, into every alternative's search.
    const aggregate = crypto.randomUUID();
    const root = await provider(app, { inventory: { VCPU: { total: 16 } }, aggregates: [aggregate] });
    const gpu = await provider(app, { parent: root, inventory: { CUSTOM_GPU_T4: { total: 1 } } });
    const disk = await provider(app, {
      inventory: { DISK_GB: { total: 100 } },
      traits: ['MISC_SHARES_VIA_AGGREGATE', 'STORAGE_DISK_SSD'],
      aggregates: [aggregate],
    });
    // The shared provider's trait decides: its node (loaded after the first batch) must be known.
    const answer = await candidates(
      'resources=VCPU:4,DISK_GB:10&required=STORAGE_DISK_SSD&resources_H100=CUSTOM_GPU_H100:1&resources_T4=CUSTOM_GPU_T4:1' +
        '&group_policy=none&ext_first_of=_H100,_T4',
    );
    expect(answer.allocation_requests.map((r) => r.allocations)).toEqual([
      { [root]: { resources: { VCPU: 4 } }, [disk]: { resources: { DISK_GB: 10 } }, [gpu]: { resources: { CUSTOM_GPU_T4: 1 } } },
    ]);
  });
});

describe('ext_first_of on a tree whose preferred variant is a long search that finds nothing', () => {
  beforeAll(async () => {
    app = await makeTestApp();
  });
  afterAll(() => app.close());

  it('still falls back to the next alternative (the search hands over the event loop on the way)', async () => {
    await ensureClasses(app, ['CUSTOM_FO_X', 'CUSTOM_FO_Z', 'CUSTOM_FO_T']);
    const root = await provider(app);
    const left = await provider(app, { parent: root });
    const right = await provider(app, { parent: root });
    // 64 x 64 pairs for _A and _B, none in one subtree: more than 4,096 steps of search for nothing.
    for (let i = 0; i < 64; i += 1) {
      await provider(app, { parent: left, inventory: { CUSTOM_FO_X: { total: 1 } } });
      await provider(app, { parent: right, inventory: { CUSTOM_FO_Z: { total: 1 } } });
    }
    const t = await provider(app, { parent: root, inventory: { CUSTOM_FO_T: { total: 1 } } });
    const query =
      'resources_A=CUSTOM_FO_X:1&resources_B=CUSTOM_FO_Z:1&resources_T=CUSTOM_FO_T:1' +
      '&group_policy=none&same_subtree=_A,_B&ext_first_of=_B,_T';
    const answer = await candidates(query);
    expect(answer.allocation_requests).toHaveLength(64);
    for (const request of answer.allocation_requests) {
      expect(Object.keys(request.mappings!).sort()).toEqual(['_A', '_T']);
      expect(request.mappings!._T).toEqual([t]);
    }
  });
});
