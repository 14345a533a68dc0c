// Starts real libSQL servers (sqld) for the workerd test run and hands their
// URLs to the Worker as bindings. The Worker reaches the main one through a
// proxy that counts database round trips (sqldHopsUrl).
import type { TestProject } from 'vitest/node';
import { startCountingProxy } from '../helpers/counting-proxy.js';
import { startLinkControl, startPausableLink } from '../helpers/pausable-link.js';
import { startSqld, startSqldPair } from '../helpers/sqld.js';

declare module 'vitest' {
  export interface ProvidedContext {
    sqldUrl: string;
    /** A second, empty sqld nobody boots against: for the first-start race. */
    freshSqldUrl: string;
    /** GET: database requests since the last DELETE. */
    sqldHopsUrl: string;
    /** A primary (behind a counting proxy) and a replica of it, for reads near the Worker. */
    replicaPrimaryUrl: string;
    replicaPrimaryHopsUrl: string;
    replicaUrl: string;
    /** The same replica behind a proxy that holds each read 1.5 s: slower than a short PLACEMENT_DB_READ_TIMEOUT_MS. */
    slowReplicaUrl: string;
    /** A sqld of its own behind a link that can be held (accepts, answers nothing): POST <silentControlUrl>/hold, /resume. */
    silentLinkUrl: string;
    silentControlUrl: string;
  }
}

const servers: { stop(): void }[] = [];

export async function setup(project: TestProject): Promise<void> {
  const [main, fresh, pair] = await Promise.all([startSqld(), startSqld(), startSqldPair()]);
  const proxy = await startCountingProxy(main.url);
  const pairProxy = await startCountingProxy(pair.primary.url);
  const slowReplica = await startCountingProxy(pair.replica.url, { delayMs: 1_500 });
  servers.push(main, fresh, pair, proxy, pairProxy, slowReplica);
  // test/worker/database-silence.test.ts: the Worker's database held and restored from inside workerd.
  const silent = await startSqld();
  const link = await startPausableLink(silent.url);
  const control = await startLinkControl(link);
  servers.push(silent, link, control);
  project.provide('silentLinkUrl', link.url);
  project.provide('silentControlUrl', control.url);
  project.provide('replicaPrimaryUrl', pairProxy.url);
  project.provide('replicaPrimaryHopsUrl', `${pairProxy.url}/__hops`);
  project.provide('replicaUrl', pair.replica.url);
  project.provide('slowReplicaUrl', slowReplica.url);
  project.provide('sqldUrl', proxy.url);
  project.provide('freshSqldUrl', fresh.url);
  project.provide('sqldHopsUrl', `${proxy.url}/__hops`);
}

export function teardown(): void {
  for (const server of servers.reverse()) server.stop();
}
