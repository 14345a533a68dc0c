// Starts real libSQL servers (sqld) for the workerd test run and hands their
// URLs to the Worker as bindings.
import type { TestProject } from 'vitest/node';
import { startSqld, type Sqld } from '../helpers/sqld.js';

declare module 'vitest' {
  export interface ProvidedContext {
    sqldUrl: string;
    /** A second, empty sqld nobody boots against: for the first-start race. */
    freshSqldUrl: string;
  }
}

const servers: Sqld[] = [];

export async function setup(project: TestProject): Promise<void> {
  servers.push(...(await Promise.all([startSqld(), startSqld()])));
  project.provide('sqldUrl', servers[0]!.url);
  project.provide('freshSqldUrl', servers[1]!.url);
}

export function teardown(): void {
  for (const server of servers) server.stop();
}
