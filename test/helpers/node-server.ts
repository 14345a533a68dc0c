// Real `npm start` processes for tests that need the Node server itself (and
// several OS processes on one database file), not app.request().
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** What the server wrote to stderr until it had warmed up. */
  startLog: string;
  stop(): Promise<void>;
}

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * Starts the service as `npm start` does (scripts/start.mjs: the bundle of the current sources,
 * made fresh once per run by test/start-bundle-run.ts) on a free port against `dbUrl`; resolves
 * once it listens and has warmed up. One process, not tsx's CLI in front of one transpiling
 * src/ at every start.
 */
export function startServer(dbUrl: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  return startServerProcess([join(ROOT, 'scripts', 'start.mjs')], dbUrl, env, ROOT);
}

/** Same, for any `node ARGS` that serves the app (the built dist/server.mjs). */
export function startServerProcess(args: string[], dbUrl: string, env: Record<string, string> = {}, cwd = ROOT): Promise<ServerProcess> {
  const child = spawn(process.execPath, args, {
    cwd,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      PLACEMENT_DB_URL: dbUrl,
      PLACEMENT_AUTH_STRATEGY: 'noauth2',
      PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return new Promise((resolve, reject) => {
    let log = '';
    const logsInfo = ['debug', 'info'].includes(env.LOG_LEVEL ?? 'info');
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`server did not start:\n${log}`));
    }, 60_000);
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      log += chunk;
      const match = /"url":"(http:\/\/[^"]+)"/.exec(log);
      // Listening comes before the database is prepared: started means warmed up (the one
      // `placement-edge ready` line, also in a cluster), as systemd waits for /readyz.
      if (match && (log.includes('"msg":"placement-edge ready"') || !logsInfo)) {
        clearTimeout(timer);
        resolve({ url: match[1]!, child, startLog: log, stop });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${log}`));
    });
  });
}
