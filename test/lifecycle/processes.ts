// Real server processes for the start/stop and fault tests: the service run
// as `npm start` runs it (node scripts/start.mjs, one process running the
// bundle of the current sources, test/start-bundle-run.ts; or npm itself), its
// stderr kept, its process tree read from /proc.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const ROOT = join(import.meta.dirname, '..', '..');
export const ENTRY = join(ROOT, 'src', 'entry', 'node.ts');
export const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs')).href;
/** npm start's launcher: the bundle of the current sources, without transpiling at each start. */
const LAUNCHER = join(ROOT, 'scripts', 'start.mjs');

export interface Running {
  child: ChildProcess;
  url: string;
  port: number;
  /** Everything written to stderr so far. */
  log(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `node scripts/start.mjs` (or `npm start` with npm: true) on a free port; resolves once it listens. */
export function spawnServer(env: Record<string, string>, opts: { npm?: boolean } = {}): Promise<Running> {
  const [command, args] = opts.npm ? ['npm', ['start', '--silent']] : [process.execPath, [LAUNCHER]];
  const child = spawn(command as string, args as string[], {
    cwd: ROOT,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      PLACEMENT_AUTH_STRATEGY: 'noauth2',
      LOG_LEVEL: 'debug',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const match = /"url":"(http:\/\/[^"]+)"/.exec(stderr);
      if (!match) return;
      clearInterval(timer);
      resolve({ child, url: match[1]!, port: Number(new URL(match[1]!).port), log: () => stderr, exited });
    }, 50);
    void exited.then(({ code }) => {
      clearInterval(timer);
      reject(new Error(`server exited with ${code}:\n${stderr}`));
    });
  });
}

/** Stops a server `spawnServer` started (SIGTERM, then waits for its exit); nothing when it never started or has exited. */
export async function stopServer(server: Running | undefined): Promise<void> {
  if (!server || server.child.exitCode !== null) return;
  server.child.kill('SIGTERM');
  await server.exited;
}

export interface Proc {
  pid: number;
  ppid: number;
  cmd: string;
}

/** The live processes below `pid` (from /proc). */
export function descendants(pid: number): Proc[] {
  const all = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (fields[0] === 'Z') return []; // exited, not yet reaped
        const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8').replaceAll('\0', ' ');
        return [{ pid: Number(d), ppid: Number(fields[1]), cmd }];
      } catch {
        return [];
      }
    });
  const found: Proc[] = [];
  const frontier = [pid];
  while (frontier.length) {
    const parent = frontier.pop()!;
    for (const p of all.filter((q) => q.ppid === parent)) {
      found.push(p);
      frontier.push(p.pid);
    }
  }
  return found;
}

export const isAlive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};

export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

/** Whether something accepts connections on the port. */
export function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface RawExchange {
  socket: Socket;
  /** Resolves with all the server sent, once it closed the connection. */
  closed: Promise<string>;
  /** What the server has sent so far. */
  received(): string;
}

/** A raw connection that sends `data`; what comes back is collected until the server closes it. */
export function rawConnection(port: number, data: string): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(data);
      resolve({ socket, closed, received: () => received });
    });
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    const closed = new Promise<string>((done) => socket.once('close', () => done(received)));
    socket.once('error', reject);
  });
}

export const ADMIN_HEADERS = {
  'x-auth-token': 'admin',
  'content-type': 'application/json',
  accept: 'application/json',
  'openstack-api-version': 'placement 1.39',
};

/** The cluster's server processes that are listening: the primary's children that logged so (LOG_LEVEL=debug). */
export const listeningServerProcesses = (server: Running) =>
  descendants(server.child.pid!).filter(
    (p) => p.ppid === server.child.pid && server.log().includes(`"msg":"server process listening","url":"${server.url}","pid":${p.pid}}`),
  );
