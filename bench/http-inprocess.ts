// CPU per request of the app alone (Hono's routing and every middleware, no
// socket): GET / and a 404 through app.fetch, in this process, for the
// checkout at REPO (default: this one). For A/B runs of the middleware stack
// where a server's socket and database would drown the difference.
//   npx tsx bench/http-inprocess.ts [REPO] [--n 20000] [--rounds 5]
import { resolve } from 'node:path';

const args = process.argv.slice(2);
const opt = (n: string, d: number) => {
  const i = args.indexOf(n);
  return i < 0 ? d : Number(args[i + 1]);
};
const repo = resolve(args.find((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--')) ?? '.');
const { makeTestApp } = (await import(`${repo}/test/helpers/test-app.ts`)) as typeof import('../test/helpers/test-app.js');
const t = await makeTestApp({ LOG_LEVEL: 'warn' });
const headers = { 'x-auth-token': 'admin', accept: 'application/json', 'openstack-api-version': 'placement latest' };
const n = opt('--n', 20000);
const once = async (path: string) => {
  const res = await t.app.fetch(new Request(`http://localhost${path}`, { headers }));
  await res.arrayBuffer();
};
const perRequest = async (path: string) => {
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await once(path);
  const c = process.cpuUsage(c0);
  return ((c.user + c.system) / n).toFixed(1);
};
for (let r = 0; r < opt('--rounds', 5); r++) {
  const root = await perRequest('/');
  const usages = await perRequest('/nowhere');
  console.log(`${repo}: GET / ${root} us, GET /nowhere (404) ${usages} us (CPU per request, in process)`);
}
process.exit(0);
