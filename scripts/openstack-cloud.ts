// A small real OpenStack from Debian's packages around a placement service in Keystone
// mode: RabbitMQ, PostgreSQL, Keystone, Glance (file store, one tiny image), Nova 26
// (nova-api under uwsgi, nova-conductor, nova-scheduler, nova-compute `compute1` and
// `compute2` with the fake live-migrating driver, `compute3` with the small fake driver
// for capacity races) and a Neutron stand-in (test/openstack/neutron-standin.ts) that
// answers "no ports". The placement service is this one (`npm start`, Keystone mode, its
// Cyborg API as the `accelerator` service) or OpenStack Placement 8.0.0 (Debian's
// placement-api under uwsgi with keystonemiddleware), for running the same steps on both.
//
//   npx tsx scripts/openstack-cloud.ts start [--placement edge|8.0.0]
//       starts the cloud, prints where everything is and the `openstack` CLI's
//       environment (also written to DIR/openrc), and runs until SIGINT/SIGTERM,
//       then stops every process it started and removes DIR.
//
// Every port is a free loopback port, every file is under one temporary DIR (PostgreSQL on
// a unix socket there; RabbitMQ with its own node name, ports, epmd and directories), and
// nothing is installed or changed outside DIR. test/openstack/ drives it (startCloud()).
// Needs the Debian packages named by cloudMissing(); .ci/run installs them.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  closeSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { adminCliEnv, freePort, keystoneMissing, type Keystone, startKeystone } from '../test/helpers/keystone.js';
import { startServer, type ServerProcess } from '../test/helpers/node-server.js';
import { type NeutronStandIn, startNeutronStandIn } from '../test/openstack/neutron-standin.js';

const run = promisify(execFile);
const UWSGI = '/usr/bin/uwsgi';

export type PlacementKind = 'edge' | '8.0.0';

/** The Debian packages the cloud needs, each with a file that shows it is installed. */
const PARTS: [file: string, pkg: string][] = [
  ['/usr/bin/nova-api-wsgi', 'nova-api'],
  ['/usr/bin/nova-conductor', 'nova-conductor'],
  ['/usr/bin/nova-scheduler', 'nova-scheduler'],
  ['/usr/bin/nova-compute', 'nova-compute'],
  ['/usr/bin/nova-manage', 'nova-common'],
  ['/usr/bin/glance-api', 'glance-api'],
  ['/usr/lib/rabbitmq/bin/rabbitmq-server', 'rabbitmq-server'],
  ['/usr/bin/epmd', 'erlang-base (with rabbitmq-server)'],
  ['/usr/bin/openstack', 'python3-openstackclient'],
  ['/usr/lib/python3/dist-packages/psycopg2', 'python3-psycopg2'],
  ['/usr/lib/python3/dist-packages/openstack', 'python3-openstacksdk'],
  ['/usr/lib/python3/dist-packages/cyborgclient', 'python3-cyborgclient'],
  ['/usr/bin/placement-api', 'placement-api'],
  ['/usr/sbin/runuser', 'util-linux'],
];

function postgresBin(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  const bin = versions.map((v) => join(base, v, 'bin')).find((b) => existsSync(join(b, 'initdb')));
  return bin;
}

/** Why the cloud cannot start here (naming the Debian package), or undefined when it can. */
export function cloudMissing(): string | undefined {
  const keystone = keystoneMissing();
  if (keystone) return keystone;
  for (const [file, pkg] of PARTS) if (!existsSync(file)) return `${pkg} is not installed (${file})`;
  if (!postgresBin()) return 'postgresql is not installed (initdb)';
  return undefined;
}

/** A service user each OpenStack service authenticates as (all in project `service`). */
const SERVICE_USERS = ['placement', 'nova', 'glance', 'cyborg', 'neutron'] as const;

export interface ComputeHost {
  host: string;
  driver: string;
  /** Extra lines of the host's own config file. */
  extra: string[];
}

export const COMPUTE_HOSTS: ComputeHost[] = [
  // Debug logging: the accelerator scenario looks for the event compute1 received.
  { host: 'compute1', driver: 'fake.FakeLiveMigrateDriver', extra: ['debug = true'] },
  { host: 'compute2', driver: 'fake.FakeLiveMigrateDriver', extra: [] },
  // The race host: SmallFakeDriver reports 2 VCPU; at 1.5 per VCPU it has room for
  // exactly RACE_ROOM servers of one VCPU (memory and disk leave room for many more).
  {
    host: 'compute3',
    driver: 'fake.SmallFakeDriver',
    extra: ['cpu_allocation_ratio = 1.5', 'ram_allocation_ratio = 1.0', 'disk_allocation_ratio = 1.0', 'reserved_host_memory_mb = 0'],
  },
];
/** How many one-VCPU servers compute3 holds. */
export const RACE_ROOM = 3;

interface Daemon {
  name: string;
  child: ChildProcess;
  log: string;
}

export interface Cloud {
  dir: string;
  placement: PlacementKind;
  keystone: Keystone;
  placementUrl: string;
  novaUrl: string;
  glanceUrl: string;
  neutron: NeutronStandIn;
  /** The image every server boots from. */
  imageId: string;
  /** The `openstack` CLI's environment for the cloud admin. */
  adminEnv: Record<string, string>;
  /** Password of each service user. */
  passwords: Record<(typeof SERVICE_USERS)[number], string>;
  /** nova.conf (the controller's; what nova-manage reads). */
  novaConf: string;
  /** Seconds each start step took, in order. */
  timings: [step: string, seconds: number][];
  /** Runs `nova-manage ARGS`; resolves with its exit code and output (it does not throw on a non-zero exit). */
  novaManage(args: string[]): Promise<{ code: number; output: string }>;
  /**
   * Stops every Nova service (nova-api, nova-conductor, nova-scheduler, each nova-compute) /
   * starts them again, resolving once nova-api answers: a cut-over's "stop Nova, ..., restart".
   */
  stopNova(): Promise<void>;
  startNova(): Promise<void>;
  /**
   * Starts placement-edge as this cloud's would be (Keystone mode, user `placement`) on the
   * database file `dbFile`, on a free port; resolves with its URL once it is ready. Stopped
   * with the cloud. The catalog is left as it is.
   */
  startPlacementEdge(dbFile: string): Promise<string>;
  /** Stops one compute host's nova-compute (SIGKILL: a host that dies) / starts it again. */
  killCompute(host: string): Promise<void>;
  startCompute(host: string): Promise<void>;
  /** The end of a daemon's log (nova-api, nova-conductor, nova-scheduler, compute1 ..., glance, placement, rabbitmq). */
  logOf(name: string, chars?: number): string;
  stop(): Promise<void>;
}

function ini(sections: Record<string, Record<string, string | number | boolean>>): string {
  return `${Object.entries(sections)
    .map(([name, values]) => [`[${name}]`, ...Object.entries(values).map(([k, v]) => `${k} = ${v}`)].join('\n'))
    .join('\n\n')}\n`;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, alive?: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const dead = alive?.();
    if (dead) throw new Error(`${what}: ${dead}`);
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${what}: not ready within ${timeoutMs / 1000} s`);
}

const httpUp = (url: string) => async () => {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  await res.arrayBuffer();
  return res.status < 500;
};

const tcpUp = (port: number) => async () =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

export interface CloudOptions {
  placement?: PlacementKind;
  /** Each start step's line. */
  log?: (line: string) => void;
  /** Called at once with what stops everything started so far (for a signal during the start). */
  onStopper?: (stop: () => Promise<void>) => void;
}

export async function startCloud(options: CloudOptions = {}): Promise<Cloud> {
  const missing = cloudMissing();
  if (missing) throw new Error(missing);
  const placement = options.placement ?? 'edge';
  const say = options.log ?? (() => {});
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'openstack-cloud-'));
  chmodSync(dir, 0o755);
  const logs = join(dir, 'logs');
  mkdirSync(logs);
  const daemons: Daemon[] = [];
  const timings: [string, number][] = [];
  const t0 = Date.now();
  let last = t0;
  const step = (name: string) => {
    const now = Date.now();
    timings.push([name, (now - last) / 1000]);
    say(`openstack-cloud: ${name} in ${((now - last) / 1000).toFixed(1)} s (${((now - t0) / 1000).toFixed(1)} s in all)`);
    last = now;
  };
  let keystone: Keystone | undefined;
  let neutron: NeutronStandIn | undefined;
  const edges: ServerProcess[] = [];
  const pgBin = postgresBin()!;
  const pgDir = join(dir, 'pg');
  const asPostgres = (cmd: string, args: string[]) =>
    root ? run('/usr/sbin/runuser', ['-u', 'postgres', '--', cmd, ...args]) : run(cmd, args);
  let pgStarted = false;
  const rabbit = { port: 0, dist: 0, epmd: 0 };

  /** Starts a daemon in its own process group, its output in logs/NAME.log. */
  const daemon = (name: string, cmd: string, args: string[], env: Record<string, string> = {}, cwd = dir): Daemon => {
    const log = join(logs, `${name}.log`);
    const out = openSync(log, 'a');
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', out, out] });
    closeSync(out);
    const d = { name, child, log };
    daemons.push(d);
    return d;
  };
  const exited = (d: Daemon) => () =>
    d.child.exitCode !== null || d.child.signalCode !== null
      ? `exited (${d.child.exitCode ?? d.child.signalCode}); its log:\n${tail(d.log, 3000)}`
      : undefined;
  /** Kills a daemon's whole process group (uwsgi's workers, Erlang's helpers): nothing it holds is kept. */
  const stopDaemon = async (d: Daemon) => {
    if (d.child.exitCode !== null || d.child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => d.child.once('exit', () => resolve()));
    try {
      process.kill(-d.child.pid!, 'SIGKILL');
    } catch {
      return;
    }
    await gone;
  };

  let stopping: Promise<void> | undefined;
  const stopAll = () => (stopping ??= stopEverything());
  const stopEverything = async () => {
    watchdog.kill('SIGKILL');
    await Promise.all(daemons.map(stopDaemon));
    if (rabbit.epmd) await run('/usr/bin/epmd', ['-port', String(rabbit.epmd), '-kill']).catch(() => {});
    await Promise.all(edges.map((e) => e.stop()));
    await neutron?.close();
    await keystone?.close();
    if (pgStarted) await asPostgres(join(pgBin, 'pg_ctl'), ['-D', join(pgDir, 'data'), '-m', 'immediate', 'stop']).catch(() => {});
    // OPENSTACK_CLOUD_LOGS=DIR keeps every service's log (a folder per cloud) after the stop.
    const keep = process.env.OPENSTACK_CLOUD_LOGS;
    if (keep) cpSync(logs, join(keep, basename(dir)), { recursive: true });
    rmSync(dir, { recursive: true, force: true });
  };

  options.onStopper?.(stopAll);
  // Where this process dies without stopping the cloud (killed, a crashed test worker), the
  // watchdog does it: it kills every process working in DIR or Keystone's folder, and those
  // in DIR/pids, stops PostgreSQL and removes both folders.
  const watchdog = spawn(
    '/bin/bash',
    ['-c', WATCHDOG, 'openstack-cloud-watchdog', String(process.pid), dir, pgBin, root ? 'postgres' : ''],
    {
      detached: true,
      stdio: 'ignore',
    },
  );
  watchdog.unref();
  try {
    // PostgreSQL: a private cluster on a unix socket in DIR/pg, trust auth for user `cloud`.
    mkdirSync(pgDir);
    if (root) chownSync(pgDir, ...(await postgresIds()));
    const keystoneStart = startKeystone();
    // Keystone's own failure is reported where it is awaited.
    keystoneStart.catch(() => {});
    await asPostgres(join(pgBin, 'initdb'), ['-D', join(pgDir, 'data'), '-U', 'cloud', '--auth=trust', '--no-sync']);
    await asPostgres(join(pgBin, 'pg_ctl'), [
      '-D',
      join(pgDir, 'data'),
      '-l',
      join(pgDir, 'postgres.log'),
      '-w',
      '-o',
      `-c listen_addresses='' -c unix_socket_directories=${pgDir} -c fsync=off -c synchronous_commit=off -c max_connections=300`,
      'start',
    ]);
    pgStarted = true;
    for (const db of ['nova_api', 'nova', 'nova_cell0', 'glance', 'placement']) {
      await asPostgres(join(pgBin, 'createdb'), ['-h', pgDir, '-U', 'cloud', db]);
    }
    const db = (name: string) => `postgresql+psycopg2://cloud@/${name}?host=${pgDir}`;
    step('PostgreSQL');

    // RabbitMQ: its own node name, AMQP and distribution ports, epmd port and directories.
    const rmq = join(dir, 'rabbitmq');
    for (const sub of ['mnesia', 'log', 'home']) mkdirSync(join(rmq, sub), { recursive: true });
    rabbit.port = await freePort();
    rabbit.dist = await freePort();
    rabbit.epmd = await freePort();
    writeFileSync(join(rmq, 'enabled_plugins'), '[].\n');
    writeFileSync(join(rmq, 'rabbitmq.conf'), `listeners.tcp.default = 127.0.0.1:${rabbit.port}\n`);
    const node = `cloud${rabbit.port}@localhost`;
    const rabbitEnv = {
      HOME: join(rmq, 'home'),
      RABBITMQ_NODENAME: node,
      RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
      RABBITMQ_NODE_PORT: String(rabbit.port),
      RABBITMQ_DIST_PORT: String(rabbit.dist),
      ERL_EPMD_PORT: String(rabbit.epmd),
      ERL_EPMD_ADDRESS: '127.0.0.1',
      RABBITMQ_MNESIA_BASE: join(rmq, 'mnesia'),
      RABBITMQ_LOG_BASE: join(rmq, 'log'),
      RABBITMQ_CONFIG_FILE: join(rmq, 'rabbitmq.conf'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(rmq, 'enabled_plugins'),
      RABBITMQ_PID_FILE: join(rmq, 'pid'),
      RABBITMQ_CONF_ENV_FILE: '/dev/null',
    };
    const rabbitDaemon = daemon('rabbitmq', '/usr/lib/rabbitmq/bin/rabbitmq-server', [], rabbitEnv, rmq);
    const transportUrl = `rabbit://guest:guest@127.0.0.1:${rabbit.port}/`;

    // Nova's and Glance's databases need neither Keystone nor RabbitMQ: they are set up beside
    // Keystone's start and registration (each nova-manage run spends seconds importing Nova).
    const ndir = join(dir, 'nova');
    mkdirSync(join(ndir, 'state'), { recursive: true });
    const gdir = join(dir, 'glance');
    mkdirSync(join(gdir, 'images'), { recursive: true });
    const dbConf = join(dir, 'db-setup.conf');
    writeFileSync(
      dbConf,
      ini({ DEFAULT: { transport_url: transportUrl }, api_database: { connection: db('nova_api') }, database: { connection: db('nova') } }),
    );
    const setupManage = (args: string[]) => run('/usr/bin/nova-manage', ['--config-file', dbConf, ...args], { cwd: ndir });
    const novaDatabases = (async () => {
      await setupManage(['api_db', 'sync']);
      await setupManage(['cell_v2', 'map_cell0', '--database_connection', db('nova_cell0')]);
      await setupManage([
        'cell_v2',
        'create_cell',
        '--name',
        'cell1',
        '--database_connection',
        db('nova'),
        '--transport-url',
        transportUrl,
      ]);
      await setupManage(['db', 'sync']);
    })();
    const glanceDbConf = join(dir, 'glance-db.conf');
    writeFileSync(glanceDbConf, ini({ database: { connection: db('glance') } }));
    const glanceDatabase = run('/usr/bin/glance-manage', ['--config-file', glanceDbConf, 'db_sync'], { cwd: gdir });
    // Their failures are reported where they are awaited.
    novaDatabases.catch(() => {});
    glanceDatabase.catch(() => {});

    // The Neutron stand-in.
    neutron = await startNeutronStandIn();

    keystone = await keystoneStart;
    writeFileSync(join(dir, 'keystone-dir'), keystone.dir);
    step('Keystone (and RabbitMQ, the Neutron stand-in beside it)');
    const ks = keystone;
    const passwords = Object.fromEntries(SERVICE_USERS.map((u) => [u, `${u}-${crypto.randomUUID()}`])) as Cloud['passwords'];
    const placementPort = await freePort();
    const novaPort = await freePort();
    const glancePort = await freePort();
    const placementUrl = `http://127.0.0.1:${placementPort}`;
    const novaUrl = `http://127.0.0.1:${novaPort}/v2.1`;
    const glanceUrl = `http://127.0.0.1:${glancePort}`;
    await registerCatalog(ks, passwords, [
      ['placement', 'placement', placementUrl],
      ['nova', 'compute', novaUrl],
      ['glance', 'image', glanceUrl],
      ['neutron', 'network', neutron.url],
      ...(placement === 'edge' ? ([['cyborg', 'accelerator', `${placementUrl}/accelerator/v2`]] as [string, string, string][]) : []),
    ]);
    step('Keystone users, services and endpoints');

    const authSection = (user: (typeof SERVICE_USERS)[number]) => ({
      auth_type: 'password',
      auth_url: ks.url,
      username: user,
      password: passwords[user],
      project_name: 'service',
      user_domain_name: 'Default',
      project_domain_name: 'Default',
      region_name: 'RegionOne',
    });
    const authtoken = (user: (typeof SERVICE_USERS)[number]) => ({
      www_authenticate_uri: ks.url,
      ...authSection(user),
      service_token_roles_required: true,
    });

    /** placement-edge in Keystone mode on `dbFile`, its request log in logs/LOGNAME.log. */
    const startEdge = async (dbFile: string, port: number, logName: string): Promise<ServerProcess> => {
      const server = await startServer(`file:${dbFile}`, {
        PORT: String(port),
        PLACEMENT_AUTH_STRATEGY: 'keystone',
        PLACEMENT_KEYSTONE_AUTH_URL: ks.url,
        PLACEMENT_KEYSTONE_USERNAME: 'placement',
        PLACEMENT_KEYSTONE_PASSWORD: passwords.placement,
        PLACEMENT_KEYSTONE_PROJECT_NAME: 'service',
        PLACEMENT_KEYSTONE_TIMEOUT_MS: '60000',
        PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'true',
        PLACEMENT_WORKERS: '1',
        // Accelerator-request events: to the `compute` endpoint of the catalog, as user `nova`
        // (Cyborg's [nova] section; Nova's policy wants the admin role for external events).
        PLACEMENT_NOVA_USERNAME: 'nova',
        PLACEMENT_NOVA_PASSWORD: passwords.nova,
        PLACEMENT_NOVA_PROJECT_NAME: 'service',
        PLACEMENT_NOVA_REGION_NAME: 'RegionOne',
        LOG_LEVEL: 'info',
      });
      edges.push(server);
      appendFileSync(join(dir, 'pids'), `${server.child.pid}\n`);
      // Its request log, for a failing test's message.
      const edgeLog = join(logs, `${logName}.log`);
      writeFileSync(edgeLog, server.startLog);
      server.child.stderr?.on('data', (chunk: Buffer) => appendTail(edgeLog, chunk));
      return server;
    };

    // The placement service.
    if (placement === 'edge') {
      await startEdge(join(dir, 'placement-edge.db'), placementPort, 'placement');
    } else {
      const pdir = join(dir, 'placement');
      mkdirSync(pdir);
      writeFileSync(
        join(pdir, 'placement.conf'),
        ini({
          DEFAULT: { debug: false },
          api: { auth_strategy: 'keystone' },
          keystone_authtoken: authtoken('placement'),
          placement_database: { connection: db('placement') },
        }),
      );
      await run('/usr/bin/placement-manage', ['--config-file', join(pdir, 'placement.conf'), 'db', 'sync'], {
        env: { ...process.env, OS_PLACEMENT_CONFIG_DIR: pdir },
      });
      const d = daemon('placement', UWSGI, uwsgiArgs(placementPort, '/usr/bin/placement-api'), { OS_PLACEMENT_CONFIG_DIR: pdir }, pdir);
      await waitFor('Placement 8.0.0', httpUp(`${placementUrl}/`), 180_000, exited(d));
    }
    step(`placement (${placement === 'edge' ? 'placement-edge' : 'Placement 8.0.0'})`);

    await waitFor('RabbitMQ', tcpUp(rabbit.port), 180_000, exited(rabbitDaemon));
    step('RabbitMQ answering');

    // Glance: glance-api (its own eventlet server), a file store in DIR/glance/images.
    const glanceConf = join(gdir, 'glance-api.conf');
    writeFileSync(
      glanceConf,
      ini({
        DEFAULT: {
          bind_host: '127.0.0.1',
          bind_port: glancePort,
          workers: 1,
          enabled_backends: 'file:file',
          image_cache_dir: join(gdir, 'cache'),
          lock_path: join(gdir, 'lock'),
        },
        database: { connection: db('glance') },
        keystone_authtoken: authtoken('glance'),
        paste_deploy: { flavor: 'keystone', config_file: '/etc/glance/glance-api-paste.ini' },
        glance_store: { default_backend: 'file' },
        file: { filesystem_store_datadir: join(gdir, 'images') },
        os_glance_staging_store: { filesystem_store_datadir: join(gdir, 'staging') },
        os_glance_tasks_store: { filesystem_store_datadir: join(gdir, 'tasks') },
        oslo_concurrency: { lock_path: join(gdir, 'lock') },
      }),
    );
    const glanceSync = glanceDatabase.then(() =>
      daemon('glance', '/usr/bin/glance-api', ['--config-file', glanceConf, '--log-file', join(logs, 'glance-api.log')], {}, gdir),
    );

    // Nova: one nova.conf for the controller's services, one file more per compute host.
    copyFileSync('/etc/nova/api-paste.ini', join(ndir, 'api-paste.ini'));
    const novaConf = join(ndir, 'nova.conf');
    writeFileSync(
      novaConf,
      ini({
        DEFAULT: {
          transport_url: transportUrl,
          state_path: join(ndir, 'state'),
          my_ip: '127.0.0.1',
          compute_driver: 'fake.FakeLiveMigrateDriver',
          // Hosts are found once, at the end of the start, with `nova-manage cell_v2 discover_hosts`.
          instance_usage_audit: false,
          heal_instance_info_cache_interval: -1,
          // A shelved server is offloaded at once (the default, said here).
          shelved_offload_time: 0,
          // Faster than the default 10 s: a compute killed for evacuation is seen down sooner.
          report_interval: 5,
          service_down_time: 30,
          // Nova waits for a Neutron vif-plugged event only where there are ports: there are none.
          vif_plugging_is_fatal: false,
          vif_plugging_timeout: 0,
        },
        api: { auth_strategy: 'keystone' },
        wsgi: { api_paste_config: join(ndir, 'api-paste.ini') },
        api_database: { connection: db('nova_api') },
        database: { connection: db('nova') },
        keystone_authtoken: authtoken('nova'),
        placement: { ...authSection('nova'), valid_interfaces: 'internal,public' },
        service_user: { send_service_user_token: true, ...authSection('nova') },
        glance: { region_name: 'RegionOne', valid_interfaces: 'internal,public' },
        neutron: { ...authSection('neutron'), valid_interfaces: 'internal,public' },
        cyborg: { region_name: 'RegionOne', valid_interfaces: 'internal,public' },
        conductor: { workers: 1 },
        scheduler: { workers: 1, discover_hosts_in_cells_interval: -1, max_attempts: 3 },
        filter_scheduler: { track_instance_changes: false },
        oslo_concurrency: { lock_path: join(ndir, 'lock') },
        oslo_messaging_notifications: { driver: 'noop' },
        oslo_messaging_rabbit: { heartbeat_timeout_threshold: 0 },
        vnc: { enabled: false },
        spice: { enabled: false },
        compute: { resource_provider_association_refresh: 10 },
        upgrade_levels: { compute: 'auto' },
        cinder: { os_region_name: 'RegionOne' },
      }),
    );
    const manage = (args: string[]) => run('/usr/bin/nova-manage', ['--config-file', novaConf, ...args], { cwd: ndir });
    await novaDatabases;
    step('Nova databases (api_db sync, cells, db sync: begun beside Keystone; glance db_sync too)');

    const novaEnv = { OS_NOVA_CONFIG_DIR: ndir };
    const controllers = () => ({
      api: daemon('nova-api', UWSGI, uwsgiArgs(novaPort, '/usr/bin/nova-api-wsgi'), novaEnv, ndir),
      conductor: daemon('nova-conductor', '/usr/bin/nova-conductor', ['--config-file', novaConf], {}, ndir),
      scheduler: daemon('nova-scheduler', '/usr/bin/nova-scheduler', ['--config-file', novaConf], {}, ndir),
    });
    let nova = controllers();
    const { api } = nova;
    const computeConf = (h: ComputeHost) => {
      const file = join(ndir, `${h.host}.conf`);
      mkdirSync(join(ndir, h.host, 'instances'), { recursive: true });
      writeFileSync(
        file,
        `[DEFAULT]\nhost = ${h.host}\ncompute_driver = ${h.driver}\nstate_path = ${join(ndir, h.host)}\ninstances_path = ${join(ndir, h.host, 'instances')}\n${h.extra.join('\n')}\n`,
      );
      return file;
    };
    const computes = new Map<string, Daemon>();
    const startCompute = (h: ComputeHost) => {
      const d = daemon(h.host, '/usr/bin/nova-compute', ['--config-file', novaConf, '--config-file', computeConf(h)], {}, ndir);
      computes.set(h.host, d);
      return d;
    };
    for (const h of COMPUTE_HOSTS) startCompute(h);
    await glanceSync;
    const glance = daemons.find((d) => d.name === 'glance')!;
    await waitFor('nova-api', httpUp(`${novaUrl}/`), 300_000, exited(api));
    step('nova-api answering');
    const adminEnv = { ...adminCliEnv(ks.url), OS_INTERFACE: 'public' };
    await waitFor('glance-api', httpUp(`${glanceUrl}/`), 300_000, exited(glance));
    // Glance's image API, as `openstack image create --file` calls it (without a CLI start-up).
    const adminToken = await ks.adminToken();
    const glanceCall = async (method: string, path: string, body: string | Buffer, type: string) => {
      const res = await fetch(`${glanceUrl}${path}`, { method, headers: { 'x-auth-token': adminToken, 'content-type': type }, body });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`Glance ${method} ${path}: ${res.status} ${text}`);
      return text;
    };
    const image = JSON.parse(
      await glanceCall(
        'POST',
        '/v2/images',
        JSON.stringify({ name: 'tiny', disk_format: 'raw', container_format: 'bare', visibility: 'public' }),
        'application/json',
      ),
    ) as { id: string };
    await glanceCall('PUT', `/v2/images/${image.id}/file`, Buffer.alloc(1024), 'application/octet-stream');
    const imageId = image.id;
    step('Glance answering, image `tiny` uploaded');

    // Every compute host up in Nova and its provider in placement, then mapped to cell1.
    const alive = () => {
      for (const d of [nova.conductor, nova.scheduler, ...computes.values()]) {
        const dead = exited(d)();
        if (dead) return `${d.name} ${dead}`;
      }
      return undefined;
    };
    await waitFor(
      'compute hosts in placement',
      async () => {
        const res = await fetch(`${placementUrl}/resource_providers`, {
          headers: { 'x-auth-token': adminToken, 'openstack-api-version': 'placement 1.14' },
        });
        const body = (await res.json()) as { resource_providers: { name: string }[] };
        const names = new Set(body.resource_providers.map((p) => p.name));
        return COMPUTE_HOSTS.every((h) => names.has(h.host));
      },
      300_000,
      alive,
    );
    step('compute hosts reported to placement');
    await manage(['cell_v2', 'discover_hosts', '--verbose']);
    await waitFor(
      'nova-compute services up',
      async () => {
        const res = await fetch(`${novaUrl}/os-services?binary=nova-compute`, { headers: { 'x-auth-token': adminToken } });
        const { services } = (await res.json()) as { services: { host: string; state: string }[] };
        return COMPUTE_HOSTS.every((h) => services.some((s) => s.host === h.host && s.state === 'up'));
      },
      120_000,
      alive,
    );
    step('hosts discovered (cell_v2 discover_hosts), nova-compute services up');

    const cloud: Cloud = {
      dir,
      placement,
      keystone: ks,
      placementUrl,
      novaUrl,
      glanceUrl,
      neutron,
      imageId,
      adminEnv,
      passwords,
      novaConf,
      timings,
      async novaManage(args) {
        try {
          const { stdout, stderr } = await manage(args);
          return { code: 0, output: stdout + stderr };
        } catch (err) {
          const e = err as { code?: number; stdout?: string; stderr?: string };
          if (typeof e.code !== 'number') throw err;
          return { code: e.code, output: (e.stdout ?? '') + (e.stderr ?? '') };
        }
      },
      async stopNova() {
        await Promise.all([nova.api, nova.conductor, nova.scheduler, ...computes.values()].map(stopDaemon));
      },
      async startNova() {
        nova = controllers();
        for (const h of COMPUTE_HOSTS) startCompute(h);
        await waitFor('nova-api (again)', httpUp(`${novaUrl}/`), 300_000, exited(nova.api));
      },
      async startPlacementEdge(dbFile) {
        const port = await freePort();
        await startEdge(dbFile, port, `placement-edge-${port}`);
        return `http://127.0.0.1:${port}`;
      },
      async killCompute(host) {
        const d = computes.get(host);
        if (d) await stopDaemon(d);
      },
      async startCompute(host) {
        const h = COMPUTE_HOSTS.find((c) => c.host === host);
        if (!h) throw new Error(`no compute host ${host}`);
        startCompute(h);
      },
      logOf: (name, chars = 4000) => tail(join(logs, `${name}.log`), chars),
      stop: stopAll,
    };
    writeFileSync(
      join(dir, 'openrc'),
      `${Object.entries(adminEnv)
        .map(([k, v]) => `export ${k}=${v}`)
        .join('\n')}\n`,
    );
    return cloud;
  } catch (err) {
    const dead = daemons.map((d) => exited(d)()).find(Boolean);
    await stopAll();
    if (dead && err instanceof Error && !err.message.includes(dead)) err.message += `\n(also: ${dead})`;
    throw err;
  }
}

/**
 * uwsgi serving `wsgiFile` on 127.0.0.1:PORT: 2 processes of 1 thread (the app loaded in each,
 * exiting when it cannot load), `Connection: close` said (uwsgi closes each connection), and
 * time for requests on a loaded machine.
 */
function uwsgiArgs(port: number, wsgiFile: string): string[] {
  return [
    ...['--plugin', 'python3', '--http-socket', `127.0.0.1:${port}`, '--add-header', 'Connection: close'],
    ...['--wsgi-file', wsgiFile, '--master', '--processes', '2', '--threads', '1', '--enable-threads', '--lazy-apps'],
    ...['--die-on-term', '--buffer-size', '65535', '--socket-timeout', '120', '--need-app'],
  ];
}

async function registerCatalog(ks: Keystone, passwords: Cloud['passwords'], services: [user: string, type: string, url: string][]) {
  const json = async (method: string, path: string, body?: unknown) => {
    const res = await ks.api(method, path, body);
    if (res.status >= 300) throw new Error(`Keystone ${method} ${path}: ${res.status} ${await res.text()}`);
    return res.status === 204 ? {} : ((await res.json()) as Record<string, { id: string }>);
  };
  const project = (await json('POST', '/projects', { project: { name: 'service', domain_id: 'default' } })).project!.id;
  const service = (await json('POST', '/roles', { role: { name: 'service' } })).role!.id;
  const roles = (await json('GET', '/roles')) as unknown as { roles: { id: string; name: string }[] };
  const admin = roles.roles.find((r) => r.name === 'admin')!.id;
  for (const user of SERVICE_USERS) {
    const id = (await json('POST', '/users', { user: { name: user, domain_id: 'default', password: passwords[user] } })).user!.id;
    await json('PUT', `/projects/${project}/users/${id}/roles/${service}`);
    // Nova's service user needs admin for what it does in placement (and Nova's own policies of Zed).
    if (user === 'nova' || user === 'glance' || user === 'neutron') await json('PUT', `/projects/${project}/users/${id}/roles/${admin}`);
  }
  for (const [name, type, url] of services) {
    const id = (await json('POST', '/services', { service: { name, type } })).service!.id;
    for (const iface of ['public', 'internal']) {
      await json('POST', '/endpoints', { endpoint: { service_id: id, interface: iface, url, region_id: 'RegionOne' } });
    }
  }
}

const WATCHDOG = `
parent=$1 dir=$2 pg_bin=$3 pg_user=$4
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
ks=$(cat "$dir/keystone-dir" 2>/dev/null)
if [ -d "$dir/pg/data" ]; then
  if [ -n "$pg_user" ]; then runuser -u "$pg_user" -- "$pg_bin/pg_ctl" -D "$dir/pg/data" -m immediate stop
  else "$pg_bin/pg_ctl" -D "$dir/pg/data" -m immediate stop; fi
fi >/dev/null 2>&1
for p in /proc/[0-9]*; do
  cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
  case "$cwd" in "$dir"|"$dir"/*) kill -9 "\${p#/proc/}" 2>/dev/null ;; esac
  if [ -n "$ks" ]; then case "$cwd" in "$ks"|"$ks"/*) kill -9 "\${p#/proc/}" 2>/dev/null ;; esac; fi
done
[ -f "$dir/pids" ] && while read -r pid; do kill -9 "$pid" 2>/dev/null; done < "$dir/pids"
rm -rf "$dir" \${ks:+"$ks"}
`;

async function postgresIds(): Promise<[number, number]> {
  const { stdout } = await run('/usr/bin/id', ['-u', 'postgres']);
  const { stdout: gid } = await run('/usr/bin/id', ['-g', 'postgres']);
  return [Number(stdout.trim()), Number(gid.trim())];
}

function appendTail(path: string, chunk: Buffer): void {
  try {
    appendFileSync(path, chunk);
  } catch {
    // the cloud is being removed
  }
}

function tail(path: string, chars: number): string {
  try {
    const size = statSync(path).size;
    const text = readFileSync(path, 'utf8');
    return size > chars ? text.slice(-chars) : text;
  } catch {
    return '(no log)';
  }
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  if (command !== 'start') {
    console.error('usage: tsx scripts/openstack-cloud.ts start [--placement edge|8.0.0]');
    process.exit(2);
  }
  const i = rest.indexOf('--placement');
  const kind = i === -1 ? 'edge' : rest[i + 1];
  if (kind !== 'edge' && kind !== '8.0.0') {
    console.error(`--placement: edge or 8.0.0, not ${kind}`);
    process.exit(2);
  }
  const t0 = Date.now();
  let stop: (() => Promise<void>) | undefined;
  const stopped = new Promise<void>((resolve) => {
    const onSignal = () => {
      console.error('openstack-cloud: stopping');
      void (stop ?? (async () => {}))().then(resolve);
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
  const started = startCloud({ placement: kind, log: (line) => console.error(line), onStopper: (s) => (stop = s) });
  const cloud = await Promise.race([started, stopped.then(() => process.exit(130))]);
  console.log(
    [
      `cloud started in ${((Date.now() - t0) / 1000).toFixed(1)} s in ${cloud.dir}`,
      `placement (${kind}): ${cloud.placementUrl}`,
      `keystone: ${cloud.keystone.url}`,
      `nova-api: ${cloud.novaUrl}`,
      `glance: ${cloud.glanceUrl}`,
      `neutron stand-in: ${cloud.neutron.url}`,
      `logs: ${cloud.dir}/logs`,
      `the openstack CLI: . ${cloud.dir}/openrc`,
      'Ctrl-C (SIGINT) or SIGTERM stops everything and removes the folder.',
    ].join('\n'),
  );
  await stopped;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
