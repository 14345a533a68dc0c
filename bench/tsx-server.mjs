// What server-cpu.mjs (a plain-node one-process bench) stands on: the
// flat cloud it loads (perfload's placeload shapes) and one
// server process of a checkout started through tsx, with its CPU read from
// /proc (every thread's schedstat).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export const AGGS = [
  '14a5c8a3-5a99-4e8f-88be-00d85fcb1c17',
  '66d98e7c-3c25-485d-a0dc-1cea651884de',
  'a59dbb28-fd98-4c6e-9ec5-ae5f3d04b0aa',
];
export const TRAITS = ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE2', 'STORAGE_DISK_SSD'];
export const INV = {
  MEMORY_MB: { total: 8192, min_unit: 128, max_unit: 8192 },
  DISK_GB: { total: 8192, min_unit: 5, max_unit: 8192 },
  VCPU: { total: 32, min_unit: 1, max_unit: 16 },
};
/** perfload's query, plus `extra` query text. */
export const flatQuery = (extra = '') =>
  `/allocation_candidates?resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=${AGGS[0]}&required=${TRAITS[0]}${extra}`;

/** One server process of the checkout at `repo` on the database file `db`; resolves with its URL once it listens. */
export async function startTsxServer(repo, db, { nodeArgs = [], env = {} } = {}) {
  const child = spawn('node', [...nodeArgs, '--max-semi-space-size=32', '--import', 'tsx', 'src/entry/node.ts'], {
    cwd: repo,
    env: { ...process.env, PORT: '0', PLACEMENT_WORKERS: '1', PLACEMENT_DB_URL: `file:${db}`, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise((res, rej) => {
    let buf = '';
    const on = (d) => {
      buf += d;
      const m = /"url":"(http:[^"]+)"/.exec(buf);
      if (m) res(m[1]);
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
    child.on('exit', (c) => rej(new Error(`exit ${c}: ${buf}`)));
  });
  return { child, url };
}

/** CPU time of every thread of process `pid` so far, in ns. */
export function cpuNs(pid) {
  let t = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      t += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {}
  }
  return t;
}
