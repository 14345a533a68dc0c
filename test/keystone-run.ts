// globalSetup of the Node suite: a folder for this run's Keystone parts
// (test/helpers/keystone.ts), named to every test file through the environment.
// Nothing starts here: the first file that needs a Keystone bootstraps one
// database for the run, and the first that asks for the shared Keystone starts
// it; both are lazy, so a run without Keystone files pays nothing. At the run's
// end the shared Keystone stops and the folder goes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KEYSTONE_RUN_VAR, stopSharedKeystone } from './helpers/keystone.js';

export default function setup(): () => Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'keystone-run-'));
  // The shared Keystone's watchdog stops it should this process end without the teardown.
  writeFileSync(join(dir, 'owner.pid'), String(process.pid));
  process.env[KEYSTONE_RUN_VAR] = dir;
  return async () => {
    await stopSharedKeystone(dir);
    rmSync(dir, { recursive: true, force: true });
  };
}
