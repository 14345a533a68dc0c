// `npm run build` output installed as an operator installs it: built straight
// into a directory outside the checkout (nothing in the repository's
// node_modules is reachable from there), with only the external packages
// (libSQL's native binding) linked beside the bundles, and server.mjs started
// on a fresh database file there.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDist, EXTERNAL_PACKAGES } from '../../scripts/build.js';
import { startServerProcess, type ServerProcess } from './node-server.js';

const ROOT = join(import.meta.dirname, '..', '..');

export interface InstalledDist {
  /** The scratch directory: `opt/` holds the install, `var/` the database. */
  work: string;
  /** Where the bundles are installed. */
  installed: string;
  server: ServerProcess;
  /** Stops the server and removes `work`. */
  remove(): Promise<void>;
}

/** Builds the bundles into a new scratch directory named from `prefix` and serves from there. */
export async function installDistAndServe(prefix: string): Promise<InstalledDist> {
  const work = mkdtempSync(join(tmpdir(), prefix));
  const installed = join(work, 'opt');
  try {
    await buildDist(installed);
    mkdirSync(join(installed, 'node_modules'));
    for (const name of EXTERNAL_PACKAGES) symlinkSync(join(ROOT, 'node_modules', name), join(installed, 'node_modules', name));
    // A database path set explicitly must exist (settings-check.ts): the operator creates it, as the unit's StateDirectory does.
    mkdirSync(join(work, 'var'));
    const server = await startServerProcess([join(installed, 'server.mjs')], `file:${join(work, 'var', 'placement.db')}`, {}, installed);
    return {
      work,
      installed,
      server,
      async remove() {
        await server.stop();
        rmSync(work, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(work, { recursive: true, force: true });
    throw err;
  }
}
