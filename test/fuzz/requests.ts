// The hostile-input fuzz's vocabulary: a seeded random source, a valid request
// for every route of both APIs (built from fixtures the fuzz creates through
// the API), and the ways the fuzz spoils them (JSON values of the wrong type,
// huge numbers, control and unpaired characters, broken UTF-8, odd query
// strings and path segments, bad headers and methods).
import { fpgaHostReport } from '../cyborg/helpers.js';
import type { TestApp } from '../helpers/test-app.js';
import type { Random } from '../helpers/random.js';

/** One request as the fuzz sends it; the body is text or raw bytes. */
export interface FuzzRequest {
  method: string;
  /** Path and query, percent-encoded as sent. */
  target: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

/** What a round's valid requests point at: everything created fresh for the round. */
export interface Fixtures {
  round: number;
  root: string;
  child: string;
  rootName: string;
  aggregate: string;
  consumer: string;
  customClass: string;
  customTrait: string;
  profileName: string;
  profileUuid: string;
  arq: string;
  host: string;
  device: string;
  deployable: string;
  deployableId: number;
  attribute: string;
}

const uuid = () => crypto.randomUUID();

async function ok(res: Response | Promise<Response>): Promise<Response> {
  const r = await res;
  if (r.status >= 300) throw new Error(`fixture setup failed: ${r.status} ${await r.text()}`);
  return r;
}

/** Creates a round's providers, inventory, allocation, classes, traits and accelerator objects through the API. */
export async function createFixtures(t: TestApp, round: number): Promise<Fixtures> {
  const root = uuid();
  const child = uuid();
  const rootName = `fuzz-root-${round}`;
  const aggregate = uuid();
  const consumer = uuid();
  const customClass = `CUSTOM_FUZZ_${round}`;
  const customTrait = `CUSTOM_FUZZ_T${round}`;
  const host = `fuzz-host-${round}.example`;
  const acc = (method: string, path: string, body?: unknown) =>
    t.app.request(`/accelerator/v2${path}`, {
      method,
      headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'accelerator latest' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  await ok(t.call('POST', '/resource_providers', { body: { name: rootName, uuid: root } }));
  await ok(t.call('POST', '/resource_providers', { body: { name: `fuzz-child-${round}`, uuid: child, parent_provider_uuid: root } }));
  await ok(t.call('PUT', `/resource_classes/${customClass}`));
  await ok(t.call('PUT', `/traits/${customTrait}`));
  await ok(
    t.call('PUT', `/resource_providers/${root}/inventories`, {
      body: {
        resource_provider_generation: 0,
        inventories: { VCPU: { total: 16 }, MEMORY_MB: { total: 4096, max_unit: 2048 }, [customClass]: { total: 4 } },
      },
    }),
  );
  await ok(
    t.call('PUT', `/resource_providers/${child}/inventories`, {
      body: { resource_provider_generation: 0, inventories: { FPGA: { total: 2 } } },
    }),
  );
  await ok(t.call('PUT', `/resource_providers/${child}/traits`, { body: { resource_provider_generation: 1, traits: [customTrait] } }));
  await ok(t.call('PUT', `/resource_providers/${root}/aggregates`, { body: { resource_provider_generation: 1, aggregates: [aggregate] } }));
  await ok(
    t.call('PUT', `/allocations/${consumer}`, {
      body: {
        allocations: { [root]: { resources: { VCPU: 2 } } },
        project_id: 'fuzz-p',
        user_id: 'fuzz-u',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    }),
  );

  const report = await ok(acc('PUT', `/hosts/${host}/devices`, fpgaHostReport(host, child, 2)));
  const device = ((await report.json()) as { devices: { uuid: string }[] }).devices[0]!.uuid;
  const deployables = (await (await ok(acc('GET', '/deployables'))).json()) as { deployables: { uuid: string; rp_uuid: string }[] };
  const deployable = deployables.deployables.find((d) => d.rp_uuid === child)!.uuid;
  const idRow = await t.deps.store.client.execute({ sql: 'SELECT id FROM deployables WHERE uuid = ?', args: [deployable] });
  const deployableId = Number(idRow.rows[0]!.id);
  const profileName = `fuzz-dp-${round}`;
  const profile = await ok(
    acc('POST', '/device_profiles', [{ name: profileName, groups: [{ 'resources:FPGA': '1', [`trait:${customTrait}`]: 'required' }] }]),
  );
  const profileUuid = ((await profile.json()) as { uuid: string }).uuid;
  const arqs = await ok(acc('POST', '/accelerator_requests', { device_profile_name: profileName }));
  const arq = ((await arqs.json()) as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
  const attribute = await ok(acc('POST', '/attributes', { deployable_id: String(deployableId), key: 'rc', value: 'FPGA' }));
  return {
    round,
    root,
    child,
    rootName,
    aggregate,
    consumer,
    customClass,
    customTrait,
    profileName,
    profileUuid,
    arq,
    host,
    device,
    deployable,
    deployableId,
    attribute: ((await attribute.json()) as { uuid: string }).uuid,
  };
}

/** A route's valid request: the path (its segments, so one can be spoiled), query pairs and JSON body. */
export interface Template {
  api: 'placement' | 'accelerator';
  method: string;
  segments: string[];
  /** Indexes of segments that are parameters (ids, names). */
  params: number[];
  query: [string, string][];
  body?: unknown;
  /** The microversion asked for (default latest): older ones take other body shapes. */
  version?: string;
}

type TemplateOptions = Partial<Pick<Template, 'query' | 'body' | 'version'>>;
const P = (method: string, path: string, opts: TemplateOptions = {}): Template => tpl('placement', method, path, opts);
const A = (method: string, path: string, opts: TemplateOptions = {}): Template => tpl('accelerator', method, `/accelerator${path}`, opts);

/** `{x}` marks a parameter segment; the braces are dropped. */
function tpl(api: Template['api'], method: string, path: string, opts: TemplateOptions): Template {
  const raw = path.split('/').slice(1);
  const params: number[] = [];
  const segments = raw.map((s, i) => {
    const m = /^\{(.*)\}$/.exec(s);
    if (!m) return s;
    params.push(i);
    return m[1]!;
  });
  return { api, method, segments, params, query: opts.query ?? [], body: opts.body, version: opts.version };
}

/** Every route of both APIs (and the diagnostics, dashboard and OpenAPI document) with a request it serves. */
export function templates(f: Fixtures, generation: number): Template[] {
  const rp = f.root;
  const newRp = uuid();
  const allocationBody = {
    allocations: { [rp]: { resources: { VCPU: 1, MEMORY_MB: 128 } } },
    project_id: 'fuzz-p',
    user_id: 'fuzz-u',
    consumer_generation: 1,
    consumer_type: 'INSTANCE',
  };
  const bind = {
    [f.arq]: [
      { path: '/hostname', op: 'add', value: f.host },
      { path: '/device_rp_uuid', op: 'add', value: f.child },
      { path: '/instance_uuid', op: 'add', value: uuid() },
    ],
  };
  return [
    P('GET', '/'),
    P('GET', '/resource_providers', {
      query: [
        ['name', f.rootName],
        ['member_of', `in:${f.aggregate}`],
        ['resources', 'VCPU:1,MEMORY_MB:64'],
        ['required', `!${f.customTrait}`],
        ['in_tree', rp],
      ],
    }),
    P('POST', '/resource_providers', { body: { name: `fuzz-new-${newRp}`, uuid: newRp, parent_provider_uuid: rp } }),
    P('GET', `/resource_providers/{${rp}}`),
    P('PUT', `/resource_providers/{${rp}}`, { body: { name: `${f.rootName}-renamed`, parent_provider_uuid: null } }),
    P('DELETE', `/resource_providers/{${f.child}}`),
    P('GET', `/resource_providers/{${rp}}/aggregates`),
    P('PUT', `/resource_providers/{${rp}}/aggregates`, {
      body: { resource_provider_generation: generation, aggregates: [f.aggregate, uuid()] },
    }),
    P('GET', '/traits', {
      query: [
        ['name', `in:${f.customTrait},HW_CPU_X86_AVX`],
        ['associated', 'true'],
      ],
    }),
    P('GET', `/traits/{${f.customTrait}}`),
    P('PUT', `/traits/{CUSTOM_FUZZ_NEW_${f.round}}`),
    P('DELETE', `/traits/{${f.customTrait}}`),
    P('GET', `/resource_providers/{${rp}}/traits`),
    P('PUT', `/resource_providers/{${rp}}/traits`, {
      body: { resource_provider_generation: generation, traits: [f.customTrait, 'HW_CPU_X86_AVX'] },
    }),
    P('DELETE', `/resource_providers/{${rp}}/traits`),
    // Extension (docs/extensions-gpu.md): shared counters.
    P('GET', `/ext/resource_providers/{${rp}}/counters`),
    P('PUT', `/ext/resource_providers/{${rp}}/counters`, {
      body: {
        resource_provider_generation: generation,
        counters: { compute_slices: 64, memory_slices: 8 },
        consumption: { VCPU: { compute_slices: 1 }, MEMORY_MB: { memory_slices: 0 } },
      },
    }),
    P('GET', `/resource_providers/{${rp}}/inventories`),
    P('POST', `/resource_providers/{${rp}}/inventories`, {
      body: { resource_class: 'DISK_GB', total: 100, reserved: 1, min_unit: 1, max_unit: 50, step_size: 1, allocation_ratio: 1.5 },
    }),
    P('PUT', `/resource_providers/{${rp}}/inventories`, {
      body: {
        resource_provider_generation: generation,
        inventories: {
          VCPU: { total: 32, allocation_ratio: 4.0 },
          MEMORY_MB: { total: 4096, max_unit: 2048 },
          [f.customClass]: { total: 4 },
        },
      },
    }),
    P('DELETE', `/resource_providers/{${rp}}/inventories`),
    P('GET', `/resource_providers/{${rp}}/inventories/{VCPU}`),
    P('PUT', `/resource_providers/{${rp}}/inventories/{VCPU}`, {
      body: { resource_provider_generation: generation, total: 24, reserved: 2 },
    }),
    P('DELETE', `/resource_providers/{${rp}}/inventories/{${f.customClass}}`),
    P('GET', '/resource_classes'),
    P('POST', '/resource_classes', { body: { name: `CUSTOM_FUZZ_POSTED_${f.round}` } }),
    P('GET', `/resource_classes/{${f.customClass}}`),
    P('PUT', `/resource_classes/{CUSTOM_FUZZ_PUT_${f.round}}`),
    P('DELETE', `/resource_classes/{${f.customClass}}`),
    P('GET', `/resource_providers/{${rp}}/usages`),
    P('GET', '/usages', {
      query: [
        ['project_id', 'fuzz-p'],
        ['user_id', 'fuzz-u'],
        ['consumer_type', 'INSTANCE'],
      ],
    }),
    P('POST', '/allocations', { body: { [f.consumer]: allocationBody } }),
    P('GET', `/allocations/{${f.consumer}}`),
    P('PUT', `/allocations/{${f.consumer}}`, { body: allocationBody }),
    P('DELETE', `/allocations/{${f.consumer}}`),
    P('GET', `/resource_providers/{${rp}}/allocations`),
    P('GET', '/allocation_candidates', {
      query: [
        ['resources', 'VCPU:1,MEMORY_MB:64'],
        ['resources1', 'FPGA:1'],
        ['required1', f.customTrait],
        ['member_of', f.aggregate],
        ['group_policy', 'none'],
        ['limit', '5'],
        ['in_tree', rp],
        ['root_required', '!COMPUTE_STATUS_DISABLED'],
        ['same_subtree', '_,1'],
      ],
    }),
    P('POST', '/reshaper', {
      body: {
        inventories: {
          [rp]: { resource_provider_generation: generation, inventories: { VCPU: { total: 16 }, MEMORY_MB: { total: 4096 } } },
        },
        allocations: { [f.consumer]: allocationBody },
      },
    }),
    P('GET', '/diagnostics/audit', {
      query: [
        ['section', 'empty_consumers'],
        ['limit', '5'],
      ],
    }),
    P('POST', '/diagnostics/audit/repairs', { body: { dry_run: true, delete_empty_consumers: [uuid()], resend_dead_letters: [1] } }),
    P('GET', '/diagnostics/allocation_candidates', {
      query: [
        ['resources', 'VCPU:1'],
        ['host', f.rootName],
      ],
    }),
    P('GET', '/dashboard'),
    P('GET', '/dashboard/assets/{app.js}'),
    P('GET', '/dashboard/api/summary', {
      query: [
        ['page', '1'],
        ['per_page', '5'],
        ['name', 'fuzz'],
        ['trait', f.customTrait],
        ['resource_class', 'VCPU'],
        ['over', '80'],
      ],
    }),
    P('GET', '/openapi.json'),
    A('GET', ''),
    A('GET', '/v2'),
    A('GET', '/v2/device_profiles', { query: [['name', f.profileName]] }),
    A('POST', '/v2/device_profiles', {
      body: [{ name: `fuzz-dp-new-${uuid()}`, description: 'fuzz', groups: [{ 'resources:FPGA': '1', 'accel:bitstream_id': 'b' }] }],
    }),
    A('DELETE', '/v2/device_profiles', { query: [['value', f.profileName]] }),
    A('GET', `/v2/device_profiles/{${f.profileUuid}}`),
    A('DELETE', `/v2/device_profiles/{${f.profileName}}`),
    A('GET', '/v2/accelerator_requests', {
      query: [
        ['instance', uuid()],
        ['bind_state', 'resolved'],
      ],
    }),
    A('POST', '/v2/accelerator_requests', { body: { device_profile_name: f.profileName, device_profile_group_id: 0 } }),
    A('PATCH', '/v2/accelerator_requests', { body: bind }),
    A('DELETE', '/v2/accelerator_requests', { query: [['arqs', f.arq]] }),
    A('GET', `/v2/accelerator_requests/{${f.arq}}`),
    A('PATCH', `/v2/accelerator_requests/{${f.arq}}`, { body: { [f.arq]: [{ path: '/hostname', op: 'remove' }] } }),
    A('DELETE', `/v2/accelerator_requests/{${f.arq}}`),
    A('GET', '/v2/devices', {
      query: [
        ['hostname', f.host],
        ['type', 'FPGA'],
      ],
    }),
    A('GET', `/v2/devices/{${f.device}}`),
    A('POST', `/v2/devices/{${f.device}}/disable`),
    A('POST', `/v2/devices/{${f.device}}/enable`),
    A('GET', '/v2/deployables'),
    A('GET', `/v2/deployables/{${f.deployable}}`),
    A('PUT', `/v2/deployables/{${f.deployable}}/programmed`, { body: { bitstream_id: 'bs-1', function_id: null } }),
    A('GET', '/v2/attributes', { query: [['deployable_id', String(f.deployableId)]] }),
    A('POST', '/v2/attributes', { body: { deployable_id: f.deployableId, key: 'k', value: 'v' } }),
    A('GET', `/v2/attributes/{${f.attribute}}`),
    A('DELETE', `/v2/attributes/{${f.attribute}}`),
    A('GET', `/v2/hosts/{${f.host}}/devices`),
    A('PUT', `/v2/hosts/{${f.host}}/devices`, {
      body: { devices: [{ key: 'k1', type: 'GPU', vendor: '10de', model: 'm', status: 'enabled', deployables: [] }] },
    }),
    A('GET', '/v2/outbox', { query: [['state', 'dead']] }),
    // Older microversions, with the body shapes and query parameters they take.
    P('PUT', `/allocations/{${f.consumer}}`, {
      version: '1.0',
      body: { allocations: [{ resource_provider: { uuid: rp }, resources: { VCPU: 1 } }] },
    }),
    P('PUT', `/allocations/{${f.consumer}}`, {
      version: '1.8',
      body: { allocations: [{ resource_provider: { uuid: rp }, resources: { VCPU: 1 } }], project_id: 'fuzz-p', user_id: 'fuzz-u' },
    }),
    P('PUT', `/allocations/{${f.consumer}}`, {
      version: '1.12',
      body: { allocations: { [rp]: { resources: { VCPU: 1 } } }, project_id: 'fuzz-p', user_id: 'fuzz-u' },
    }),
    P('POST', '/allocations', {
      version: '1.13',
      body: { [f.consumer]: { allocations: { [rp]: { resources: { VCPU: 1 } } }, project_id: 'fuzz-p', user_id: 'fuzz-u' } },
    }),
    P('POST', '/resource_providers', { version: '1.0', body: { name: `fuzz-old-${newRp}`, uuid: newRp } }),
    P('PUT', `/resource_providers/{${rp}}/aggregates`, { version: '1.1', body: [f.aggregate] }),
    P('PUT', `/resource_providers/{${rp}}/inventories`, {
      version: '1.0',
      body: { resource_provider_generation: generation, inventories: { VCPU: { total: 16 }, MEMORY_MB: { total: 4096 } } },
    }),
    P('GET', '/allocation_candidates', { version: '1.10', query: [['resources', 'VCPU:1']] }),
    P('GET', '/allocation_candidates', {
      version: '1.25',
      query: [
        ['resources1', 'VCPU:1'],
        ['required1', 'HW_CPU_X86_AVX'],
        ['member_of1', f.aggregate],
      ],
    }),
    P('GET', '/resource_providers', { version: '1.3', query: [['member_of', `in:${f.aggregate}`]] }),
    P('GET', '/usages', { version: '1.9', query: [['project_id', 'fuzz-p']] }),
    A('POST', '/v2/device_profiles', {
      version: 'accelerator 2.0',
      body: [{ name: `fuzz-dp-old-${uuid()}`, groups: [{ 'resources:FPGA': '1' }] }],
    }),
    A('GET', `/v2/device_profiles/{${f.profileName}}`, { version: 'accelerator 2.1' }),
  ];
}

// --- ways to spoil a request -------------------------------------------------

const deep = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
};

/** JSON values of every wrong kind: each replaces one value (or key) of a valid body. */
export const HOSTILE_VALUES: readonly unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  -0,
  0.5,
  1.5,
  -2147483649,
  2147483647,
  2147483648,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  2 ** 63,
  1e308,
  -1e308,
  5e-324,
  '',
  ' ',
  '0',
  '-1',
  '1.5',
  '1e400',
  '99999999999999999',
  '9'.repeat(400),
  'NaN',
  'Infinity',
  'true',
  'null',
  'x'.repeat(256),
  'x'.repeat(20_000),
  'a\u0000b',
  '\u0001',
  '\t',
  '\u007f',
  '\u0085',
  '\u2028\u2029',
  '\ufeff',
  '\ud800',
  'x\udc00',
  '😀',
  'ünïcødé',
  '<script>alert(1)</script>',
  "'; DROP TABLE resource_providers; --",
  '%00',
  '../../etc/passwd',
  '00000000-0000-0000-0000-000000000000',
  'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
  '{12345678123456781234567812345678}',
  'urn:uuid:12345678-1234-5678-1234-567812345678',
  'not-a-uuid',
  '12345678-1234-5678-1234-56781234567',
  'CUSTOM_',
  'CUSTOM_lower',
  `CUSTOM_${'A'.repeat(300)}`,
  'VCPU',
  'in:',
  'in:,,',
  '!',
  '__proto__',
  'constructor',
  [],
  [null],
  [[]],
  ['x'],
  [1, 2, 3],
  Array.from({ length: 2000 }, (_, i) => i),
  {},
  { '': '' },
  { __proto__: null, constructor: 'x' },
  JSON.parse('{"__proto__": {"polluted": 1}}'),
  { toString: 1, valueOf: 2, hasOwnProperty: 3 },
  deep(30),
  deep(40),
];

export const HOSTILE_STRINGS = HOSTILE_VALUES.filter((v): v is string => typeof v === 'string');
const HOSTILE_NUMBERS = HOSTILE_VALUES.filter((v): v is number => typeof v === 'number');

/** A value of the same JSON type with odd content: these get past type checks and reach the database. */
function sameKind(rng: Random, value: unknown): unknown {
  if (typeof value === 'string') {
    const odd = rng.pick(HOSTILE_STRINGS);
    return rng.pick([odd, `${value}${odd}`, `${odd}${value}`]);
  }
  if (typeof value === 'number') return rng.pick(HOSTILE_NUMBERS);
  return rng.pick(HOSTILE_VALUES);
}

/**
 * Every string of `body` replaced by each odd string (alone and after the
 * original), every number by each odd number: one variant per replacement.
 * `rebase` applies the same replacement to a fresh body (a newer generation).
 */
export function everyValueReplaced(body: unknown): { body: unknown; rebase(fresh: unknown): unknown }[] {
  const variants: { body: unknown; rebase(fresh: unknown): unknown }[] = [];
  slots(body).forEach(({ holder, key }, at) => {
    const original = (holder as Record<string | number, unknown>)[key];
    const replacements =
      typeof original === 'string'
        ? HOSTILE_STRINGS.flatMap((odd) => [odd, `${original}${odd}`])
        : typeof original === 'number'
          ? HOSTILE_NUMBERS
          : [];
    for (const replacement of replacements) {
      const rebase = (fresh: unknown) => {
        const copy = clone(fresh);
        const slot = slots(copy)[at]!;
        (slot.holder as Record<string | number, unknown>)[slot.key] = replacement;
        return copy;
      };
      variants.push({ body: rebase(body), rebase });
    }
  });
  return variants;
}

/** Where a value sits in a parsed body: the container and its key. */
type Slot = { holder: Record<string, unknown> | unknown[]; key: string | number };

function slots(root: unknown): Slot[] {
  const found: Slot[] = [];
  const walk = (value: unknown) => {
    if (Array.isArray(value)) {
      value.forEach((v, i) => {
        found.push({ holder: value, key: i });
        walk(v);
      });
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        found.push({ holder: value as Record<string, unknown>, key: k });
        walk(v);
      }
    }
  };
  walk(root);
  return found;
}

const clone = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

/** A structural change to a parsed body: a value replaced, a key dropped, renamed or added. */
function spoilValue(rng: Random, body: unknown): unknown {
  const copy = clone(body);
  const places = slots(copy);
  if (!places.length || rng.chance(0.08)) return rng.pick(HOSTILE_VALUES);
  const { holder, key } = rng.pick(places);
  const kind = rng.below(10);
  if (kind < 3) {
    (holder as Record<string | number, unknown>)[key] = sameKind(rng, (holder as Record<string | number, unknown>)[key]);
  } else if (kind < 6) {
    (holder as Record<string | number, unknown>)[key] = clone(rng.pick(HOSTILE_VALUES));
  } else if (kind < 7 && !Array.isArray(holder)) {
    delete holder[key as string];
  } else if (kind < 8 && !Array.isArray(holder)) {
    const value = holder[key as string];
    delete holder[key as string];
    holder[
      rng.pick(['', ' ', `${String(key)} `, String(key).toUpperCase(), 'a\u0000', '\ud800', 'x'.repeat(300), '__proto__', 'constructor'])
    ] = value;
  } else if (kind < 9 && !Array.isArray(holder)) {
    holder[rng.pick(['extra', 'id', 'generation', 'uuid', 'links', '__proto__'])] = clone(rng.pick(HOSTILE_VALUES));
  } else if (Array.isArray(holder)) {
    holder.push(...(Array.from({ length: rng.below(3) + 1 }, () => clone(rng.pick(HOSTILE_VALUES))) as unknown[]));
  } else {
    (holder as Record<string, unknown>)[key as string] = [holder[key as string]];
  }
  return copy;
}

const NUMBER_LITERALS = [
  '1e400',
  '-1e400',
  '-0',
  '0.0',
  '1E+2',
  '1.0',
  '123456789012345678901234567890',
  '9007199254740993',
  '1e-400',
  '00',
  '0x10',
  '+1',
  '.5',
  'NaN',
  'Infinity',
];

/** A change to the JSON text itself: literals JSON.stringify never writes, duplicate keys, truncation, garbage. */
function spoilText(rng: Random, text: string): string {
  switch (rng.below(9)) {
    case 0: {
      const numbers = [...text.matchAll(/(?<=[:[,])-?\d+(\.\d+)?/g)];
      if (!numbers.length) return `${text}${rng.pick(NUMBER_LITERALS)}`;
      const m = rng.pick(numbers);
      return text.slice(0, m.index) + rng.pick(NUMBER_LITERALS) + text.slice(m.index! + m[0].length);
    }
    case 1: {
      // A duplicate of the first key with another value: JSON.parse keeps the last.
      const m = /\{"([^"]*)":/.exec(text);
      if (!m) return `{"a":1,"a":2}`;
      const dup = `{"${m[1]}":${JSON.stringify(rng.pick(HOSTILE_VALUES))},`;
      return rng.chance(0.5)
        ? text.replace(m[0], `${dup}"${m[1]}":`)
        : text.replace(/}$/, `,"${m[1]}":${JSON.stringify(rng.pick(HOSTILE_VALUES))}}`);
    }
    case 2:
      return text.slice(0, rng.below(text.length + 1));
    case 3:
      return text + rng.pick(['x', '}', ']', ',', ' garbage', '\u0000', '{}']);
    case 4:
      return rng.pick([
        '',
        ' ',
        'null',
        'true',
        '0',
        '""',
        '[]',
        '{}',
        '[{}]',
        '\ufeff{}',
        `\ufeff${text}`,
        'undefined',
        "{'a': 1}",
        '{"a":1,}',
      ]);
    case 5:
      // A raw (unescaped) control character inside a string literal: not JSON.
      return text.replace(/"([^"]*)"/, `"$1${rng.pick(['\u0000', '\n', '\u001f', '\t'])}"`);
    case 6:
      return text.replace(
        /"([^"]*)"/,
        `"$1${rng.pick(['\\ud800', '\\udfff', '\\u0000', '\\ud83d\\ude00', '\\uDBFF\\uDFFF', '\\x41', '\\u00'])}"`,
      );
    case 7:
      return `${'['.repeat(rng.pick([33, 100, 5000]))}${text}`;
    default:
      return ` \n\t${text}\r\n `;
  }
}

/** Bytes that are not UTF-8, inside a string literal of the body. */
function invalidUtf8(rng: Random, text: string): Uint8Array {
  const bytes = new TextEncoder().encode(text);
  const quote = bytes.indexOf(0x22);
  const at = quote < 0 ? 0 : quote + 1;
  const bad = rng.pick([[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x80], [0xe2, 0x82], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xfe, 0xfe]]);
  return new Uint8Array([...bytes.slice(0, at), ...bad, ...bytes.slice(at)]);
}

/** Path segments no route expects. */
export const ODD_SEGMENTS = [
  '',
  '%20',
  '%2F',
  'a%2Fb',
  '..',
  '.',
  '%2e%2e',
  '%ZZ',
  '%',
  '%E2%98%83',
  '%FF',
  '%C0%80',
  '%ED%A0%80',
  '%00',
  '%7F',
  '%0A',
  'x'.repeat(300),
  'x'.repeat(5000),
  '00000000-0000-0000-0000-000000000000',
  '12345678123456781234567812345678',
  '%7B12345678-1234-5678-1234-567812345678%7D',
  'NOT-A-UUID',
  ';',
  '*',
  '%22',
  "'",
  '__proto__',
  'constructor',
  'hasOwnProperty',
  'CUSTOM_',
  'custom_lower',
  'VCPU:1',
  '-1',
  '1e400',
];

/** Whole paths at the edges of the mounts: prefixes, versions, trailing slashes. */
const ODD_PATHS = [
  '/acceleratorX',
  '/accelerator/',
  '/accelerator/v1',
  '/accelerator/v3/device_profiles',
  '/accelerator/v2/',
  '/accelerator/v2//device_profiles',
  '/accelerator/v2/device_profiles/',
  '/diagnostics',
  '/diagnostics/',
  '/diagnosticsX',
  '/dashboard/',
  '/dashboard/api',
  '/dashboard/api/',
  '/dashboard/api/summary/',
  '/dashboard/assets/',
  '/openapi.json/',
  '/openapi.jsonx',
  '//',
  '/resource_providers/',
  '/traits/',
  '/allocations/',
  '/x'.repeat(500),
];

export const ODD_QUERY_PARTS = [
  '=',
  '&',
  '&&&',
  '=v',
  'k',
  'k=',
  'k=%ZZ',
  'k=%',
  'k=%E0%A4%A',
  'k=%C0%80',
  'k=%ED%A0%80',
  'k=%FF',
  '%FF=v',
  'k=a+b',
  '__proto__=1',
  'constructor=1',
  'hasOwnProperty=1',
  'toString=x',
  `k=${'x'.repeat(10_000)}`,
  'limit=-1',
  'limit=0',
  'limit=1e400',
  'limit=9999999999999999999999',
  'resources=VCPU:9999999999999999999999',
  'resources=VCPU:-1',
  'resources=:1',
  'resources=VCPU:1,VCPU:2',
  'resources=,',
  'required=in:',
  'member_of=in:',
  'member_of=in:x,,y',
  'in_tree=x',
  'page=0',
  'page=99999999999999999999',
  'over=1e9',
  'deployable_id=0',
  'deployable_id=99999999999999999999',
  'state=',
];

/** A hostile value as a query value would carry it. */
const asText = (value: unknown) => (typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));

/** Percent-encoding that also writes unpaired surrogates, as WTF-8 bytes (encodeURIComponent throws on them). */
export function encode(value: string): string {
  return value.replace(/[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]|[^\ud800-\udfff]+/g, (part) => {
    if (part.length !== 1 || part.charCodeAt(0) < 0xd800 || part.charCodeAt(0) > 0xdfff) return encodeURIComponent(part);
    const c = part.charCodeAt(0);
    return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
  });
}

/** The template's OpenStack-API-Version header. */
export const versionHeader = (t: Template) =>
  t.api === 'placement' ? `placement ${t.version ?? 'latest'}` : (t.version ?? 'accelerator latest');

/** A template as sent, with `segments` and `query` given (percent-encoded). */
export function asRequest(t: Template, segments: string[], query: string[]): FuzzRequest {
  const path = `/${segments.join('/')}`;
  return {
    method: t.method,
    target: query.length ? `${path}?${query.join('&')}` : path,
    headers: {
      'x-auth-token': 'admin',
      accept: 'application/json',
      'content-type': 'application/json',
      'openstack-api-version': versionHeader(t),
    },
    body: t.body === undefined ? undefined : JSON.stringify(t.body),
  };
}

/**
 * Each parameter segment replaced by each odd segment; each query value by
 * each odd string (percent-encoded, WTF-8 for unpaired surrogates); each odd
 * query part added.
 */
export function everyUrlPartReplaced(t: Template): FuzzRequest[] {
  const query = t.query.map(([k, v]) => `${encode(k)}=${encode(v)}`);
  const requests: FuzzRequest[] = [];
  for (const at of t.params) {
    for (const odd of ODD_SEGMENTS)
      requests.push(
        asRequest(
          t,
          t.segments.map((s, i) => (i === at ? odd : s)),
          query,
        ),
      );
  }
  query.forEach((_, at) => {
    const key = encode(t.query[at]![0]);
    for (const odd of HOSTILE_STRINGS)
      requests.push(
        asRequest(
          t,
          t.segments,
          query.map((q, i) => (i === at ? `${key}=${encode(odd)}` : q)),
        ),
      );
    requests.push(asRequest(t, t.segments, [...query, `${key}=${encode(t.query[at]![1])}`]));
  });
  for (const odd of ODD_QUERY_PARTS) requests.push(asRequest(t, t.segments, [...query, odd]));
  return requests;
}

/** The parts of a request an attacker controls, one mutated per call. */
export function spoil(rng: Random, base: Template): FuzzRequest {
  const t = { ...base, segments: [...base.segments], query: base.query.map(([k, v]) => [k, v] as [string, string]) };
  const headers: Record<string, string> = {
    'x-auth-token': 'admin',
    accept: 'application/json',
    'openstack-api-version': versionHeader(t),
  };
  let method = t.method;
  let rawQuery: string[] = t.query.map(([k, v]) => `${encode(k)}=${encode(v)}`);
  let body: string | Uint8Array | undefined;
  let jsonBody = t.body;

  const mutations = 1 + rng.below(3);
  let textSpoil: ((s: string) => string) | undefined;
  let bytesSpoil = false;
  for (let m = 0; m < mutations; m++) {
    const area = rng.below(10);
    if (area < 4 && t.body !== undefined) {
      if (rng.chance(0.6)) jsonBody = spoilValue(rng, jsonBody);
      else if (rng.chance(0.8)) textSpoil = (s) => spoilText(rng, s);
      else bytesSpoil = true;
    } else if (area < 6) {
      if (rng.chance(0.3)) rawQuery = [];
      const n = 1 + rng.below(3);
      for (let i = 0; i < n; i++) {
        const kind = rng.below(4);
        if (kind === 0 && t.query.length) {
          // The same key again, another value.
          const [k] = rng.pick(t.query);
          rawQuery.push(`${encodeURIComponent(k)}=${encode(asText(rng.pick(HOSTILE_VALUES)))}`);
        } else if (kind === 1 && rawQuery.length) {
          // A known key's value replaced (empty, hostile, or %-garbage).
          const i2 = rng.below(rawQuery.length);
          const key = rawQuery[i2]!.split('=')[0]!;
          rawQuery[i2] = `${key}=${rng.pick(['', ' ', '%ZZ', '%FF', encode(asText(rng.pick(HOSTILE_VALUES)))])}`;
        } else {
          rawQuery.push(rng.pick(ODD_QUERY_PARTS));
        }
      }
    } else if (area < 8) {
      const kind = rng.below(6);
      if (kind === 5) t.segments = rng.pick(ODD_PATHS).split('/').slice(1);
      else if (kind < 3 && t.params.length) t.segments[rng.pick(t.params)] = rng.pick(ODD_SEGMENTS);
      else if (kind === 3) t.segments.push(rng.pick(['', 'extra', '..', '%2F']));
      else t.segments.splice(1 + rng.below(t.segments.length), 0, rng.pick(['', 'x', '%2E']));
    } else if (area < 9) {
      const kind = rng.below(10);
      if (kind === 0) delete headers['x-auth-token'];
      else if (kind === 1) headers['x-auth-token'] = rng.pick(['', 'user', 'user:project', 'admin:', ':', '\u00ff']);
      else if (kind === 2) {
        headers['openstack-api-version'] = rng.pick([
          '',
          'placement',
          'placement 1',
          'placement 1.',
          'placement .1',
          'placement 1.0',
          'placement 1.17',
          'placement 1.40',
          'placement 0.9',
          'placement 2.0',
          'placement 1.-1',
          'placement 01.039',
          'placement 1.2.3',
          'placement 99999999999999999999.1',
          'placement 1.99999999999999999999',
          'placement LATEST',
          'placement latest, placement 1.0',
          'accelerator 2.0',
          'accelerator 2.1',
          'accelerator 2.2',
          'accelerator 2.9',
          'accelerator 1.0',
          'accelerator abc',
          '2.0',
          '2',
          'compute 2.1',
          '\u00ff\u00fe',
          ',,,',
        ]);
      } else if (kind === 3) headers.accept = rng.pick(['text/html', '*/*', '', 'application/json;q=0', 'garbage', 'application/*']);
      else if (kind === 4) headers['x-openstack-request-id'] = rng.pick(['req-x', '\u00ff', 'x'.repeat(1000)]);
      else if (kind === 5) headers['x-service-token'] = 'svc';
      else if (kind === 6) headers['x-roles'] = rng.pick(['', 'admin', 'reader', 'service,member']);
      else if (kind === 7) {
        // CORS: a simple request or a preflight, from the allowed origin or another.
        headers.origin = rng.pick(['https://dash.example', 'https://evil.example', 'null', '']);
        if (rng.chance(0.5)) {
          method = 'OPTIONS';
          headers['access-control-request-method'] = rng.pick(['GET', 'PUT', 'DELETE', 'FOO', '']);
          headers['access-control-request-headers'] = rng.pick(['x-auth-token', 'openstack-api-version, content-type', 'x-evil', '']);
        }
      } else
        headers['content-type'] = rng.pick([
          '',
          'text/plain',
          'application/json; charset=latin1',
          'APPLICATION/JSON',
          'application/jsonx',
          'multipart/form-data',
          'application/x-www-form-urlencoded',
          '\u00ff',
        ]);
    } else {
      method = rng.pick(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'FOO', 'PROPFIND']);
      if (!['POST', 'PUT', 'PATCH', 'DELETE', 'FOO'].includes(method)) jsonBody = undefined;
    }
  }
  if (jsonBody !== undefined && method !== 'GET' && method !== 'HEAD') {
    const text = JSON.stringify(jsonBody) ?? 'null';
    const spoiled = textSpoil ? textSpoil(text) : text;
    body = bytesSpoil ? invalidUtf8(rng, spoiled) : spoiled;
    headers['content-type'] ??= 'application/json';
  }
  const path = `/${t.segments.join('/')}`;
  const target = rawQuery.length ? `${path}?${rawQuery.join('&')}` : path;
  return { method, target, headers, body };
}
