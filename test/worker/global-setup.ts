// Starts real libSQL servers (sqld) for the workerd test run and hands their
// URLs to the Worker as bindings. The Worker reaches the main one through a
// proxy that counts database round trips (sqldHopsUrl).
import type { TestProject } from 'vitest/node';
import { startCountingProxy, type CountingProxy } from '../helpers/counting-proxy.js';
import { startSqld, type Sqld } from '../helpers/sqld.js';

declare module 'vitest' {
  export interface ProvidedContext {
    sqldUrl: string;
    /** A second, empty sqld nobody boots against: for the first-start race. */
    freshSqldUrl: string;
    /** GET: database requests since the last DELETE. */
    sqldHopsUrl: string;
  }
}

const servers: (Sqld | CountingProxy)[] = [];

export async function setup(project: TestProject): Promise<void> {
  const [main, fresh] = await Promise.all([startSqld(), startSqld()]);
  const proxy = await startCountingProxy(main.url);
  servers.push(main, fresh, proxy);
  project.provide('sqldUrl', proxy.url);
  project.provide('freshSqldUrl', fresh.url);
  project.provide('sqldHopsUrl', `${proxy.url}/__hops`);
}

export function teardown(): void {
  for (const server of servers.reverse()) server.stop();
}
