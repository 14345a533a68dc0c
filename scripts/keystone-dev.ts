// A Keystone on this machine for development, in one command: `npm run keystone:dev`.
// It is the tests' Keystone (test/helpers/keystone.ts: Debian's python3-keystone under uwsgi,
// sqlite and fernet keys in a temporary folder, `keystone-manage bootstrap`), with what
// docs/keystone.md and docs/limits.md ask of a Keystone made ready:
//   - the service user `placement` (project `service`, role `service`), and the reader role
//     on the system, which PLACEMENT_LIMITS=keystone needs to read every project's limits;
//   - the service `nova` (type `compute`), which limits are registered for;
//   - a project `demo` with user `demo` (member, reader), for a token that is not the admin's.
// It prints the environment to use (placement-edge's PLACEMENT_* and the `openstack` CLI's
// OS_*), writes it to FOLDER/env as well, and runs until Ctrl-C (SIGINT) or SIGTERM, then
// stops uwsgi and removes the folder.
//
//   npm run keystone:dev [-- --port N]
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { adminCliEnv, type Keystone, keystoneMissing, startKeystone } from '../test/helpers/keystone.js';

/** The development users: the service's own and a project's. */
const DEV_SERVICE_USER = { username: 'placement', password: 'placement-dev-pw', project: 'service' };
const DEV_PROJECT_USER = { username: 'demo', password: 'demo-dev-pw', project: 'demo' };

function portArgument(args: string[]): number | undefined {
  const i = args.indexOf('--port');
  if (i === -1) return undefined;
  const port = Number(args[i + 1]);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    console.error(`keystone:dev: --port takes a port number (1-65535), not ${args[i + 1] ?? 'nothing'}`);
    process.exit(2);
  }
  return port;
}

/** The service `nova` and the system reader role of `placement`: what docs/limits.md's steps 1-2 need. */
async function prepareForLimits(ks: Keystone, placementUserId: string): Promise<void> {
  await ks.json('POST', '/services', { service: { name: 'nova', type: 'compute' } });
  const roles = (await ks.json<{ roles: { id: string; name: string }[] }>('GET', '/roles')).roles;
  const reader = roles.find((r) => r.name === 'reader');
  if (!reader) throw new Error('Keystone has no `reader` role after bootstrap');
  await ks.json('PUT', `/system/users/${placementUserId}/roles/${reader.id}`);
}

function environment(ks: Keystone): [comment: string, variables: Record<string, string>][] {
  return [
    [
      'placement-edge in Keystone mode (docs/keystone.md)',
      {
        PLACEMENT_AUTH_STRATEGY: 'keystone',
        PLACEMENT_KEYSTONE_AUTH_URL: ks.url,
        PLACEMENT_KEYSTONE_USERNAME: DEV_SERVICE_USER.username,
        PLACEMENT_KEYSTONE_PASSWORD: DEV_SERVICE_USER.password,
        PLACEMENT_KEYSTONE_PROJECT_NAME: DEV_SERVICE_USER.project,
      },
    ],
    [
      "Keystone's project limits (docs/limits.md): register some first, e.g. `openstack registered limit create --service nova --region RegionOne --default-limit 20 class:VCPU`",
      { PLACEMENT_LIMITS: 'keystone', PLACEMENT_LIMITS_SERVICE: 'nova', PLACEMENT_LIMITS_REGION: 'RegionOne' },
    ],
    ['the openstack CLI as the cloud admin', adminCliEnv(ks.url)],
    [
      `a project user (a token: openstack --os-username ${DEV_PROJECT_USER.username} --os-password ${DEV_PROJECT_USER.password} --os-project-name ${DEV_PROJECT_USER.project} token issue)`,
      {},
    ],
  ];
}

function shell(blocks: [string, Record<string, string>][]): string {
  return blocks
    .map(([comment, vars]) => [`# ${comment}`, ...Object.entries(vars).map(([k, v]) => `export ${k}=${v}`)].join('\n'))
    .join('\n');
}

let ks: Keystone | undefined;
let stopping = false;
async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  if (ks) console.error('keystone:dev: stopping Keystone and removing its folder');
  await ks?.close();
  process.exit(code);
}

async function main(): Promise<void> {
  const missing = keystoneMissing();
  if (missing) {
    console.error(`keystone:dev: cannot start: ${missing}. Fix: apt-get install python3-keystone uwsgi uwsgi-plugin-python3`);
    process.exit(1);
  }
  const port = portArgument(process.argv.slice(2));
  // `on`, not `once`: Ctrl-C reaches this process twice (from the terminal and relayed by tsx),
  // and a second signal without a handler would kill it before Keystone's folder is removed.
  process.on('SIGINT', () => void stop(130));
  process.on('SIGTERM', () => void stop(143));

  const t0 = Date.now();
  const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  console.error('keystone:dev: setting up Keystone (db_sync, fernet keys, bootstrap), then starting it under uwsgi ...');
  ks = await startKeystone({ port });
  console.error(`keystone:dev: Keystone answers at ${ks.url} after ${elapsed()}; adding users, roles and the service nova ...`);
  const { userId } = await ks.projectUser(DEV_SERVICE_USER, ['service']);
  await ks.projectUser(DEV_PROJECT_USER, ['member', 'reader']);
  await prepareForLimits(ks, userId);

  const env = shell(environment(ks));
  const envFile = join(ks.dir, 'env');
  writeFileSync(envFile, `${env}\n`);
  console.log(env);
  console.log(`# (also in ${envFile}: \`. ${envFile}\`)`);
  console.error(`keystone:dev: ready after ${elapsed()}; Ctrl-C stops it and removes ${ks.dir}`);
}

main().catch(async (err) => {
  console.error(`keystone:dev: ${err instanceof Error ? err.message : String(err)}`);
  await stop(1);
});
