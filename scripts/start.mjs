// `npm start`: the service from a bundle of the current sources, not from tsx. tsx
// transpiles ~300 files in every process at every start (seconds, silently); the bundle
// (scripts/build.ts buildStartBundle: dist/server.mjs's recipe, the server alone) loads in a
// fraction of that. It is kept in node_modules/.cache/placement-edge/ with the list of files
// it was built from and a hash of them, package-lock.json and scripts/build.ts: a start whose
// sources hash the same runs it at once; otherwise it says so, rebuilds it (esbuild, about a
// second) and runs the new one. `npm ci` builds it already (the `prepare` script runs
// `node scripts/start.mjs --prepare`), so a fresh clone's first start needs no build.
// Plain JavaScript, so that this launcher itself needs no transpiler.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Where the bundle is kept (PLACEMENT_START_CACHE: elsewhere, for the tests of this launcher). */
const CACHE = process.env.PLACEMENT_START_CACHE || join(ROOT, 'node_modules', '.cache', 'placement-edge');
const BUNDLE = join(CACHE, 'server.mjs');
const MANIFEST = join(CACHE, 'manifest.json');
/** Files that shape the bundle besides its own inputs: the dependencies' versions, the build recipe. */
const ALWAYS_HASHED = ['package-lock.json', 'scripts/build.ts'];

const say = (line) => process.stderr.write(`placement-edge: ${line}\n`);

/** A hash of `inputs` (paths relative to the checkout) and their contents; null when one is gone. */
function hashOf(inputs) {
  const hash = createHash('sha256');
  for (const path of [...inputs, ...ALWAYS_HASHED]) {
    let content;
    try {
      content = readFileSync(join(ROOT, path));
    } catch {
      return null;
    }
    hash.update(`${path}\0${content.length}\0`);
    hash.update(content);
  }
  return hash.digest('hex');
}

/** The cached bundle when it was built from the sources as they are now. */
function freshBundle() {
  try {
    const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8'));
    if (existsSync(BUNDLE) && hashOf(manifest.inputs) === manifest.hash) return BUNDLE;
  } catch {
    // no manifest yet
  }
  return null;
}

/** Why the bundle cannot be built here (a production install without the build tools), or null. */
function buildToolsMissing() {
  for (const pkg of ['esbuild', 'tsx']) if (!existsSync(join(ROOT, 'node_modules', pkg, 'package.json'))) return `${pkg} is not installed`;
  return null;
}

/** Builds the bundle into a new folder, then moves it into place (another start may be reading the old one). */
function build() {
  mkdirSync(CACHE, { recursive: true });
  const work = mkdtempSync(join(CACHE, 'build-'));
  try {
    const built = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'build.ts'), '--start-bundle', work], {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (built.status !== 0) throw new Error(`building the server failed (scripts/build.ts exited ${built.status ?? built.signal})`);
    const inputs = JSON.parse(readFileSync(join(work, 'inputs.json'), 'utf8'));
    renameSync(join(work, 'server.mjs'), BUNDLE);
    writeFileSync(MANIFEST, `${JSON.stringify({ hash: hashOf(inputs), inputs })}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The service from its sources through tsx, as before the bundle: where it cannot be built. */
async function fromSources() {
  // process.argv[1] stays this launcher: a cluster primary's server processes come through here too.
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(ROOT, 'src', 'entry', 'node.ts')).href);
}

const prepare = process.argv[2] === '--prepare';
let bundle = freshBundle();
if (!bundle) {
  const missing = buildToolsMissing();
  if (missing && prepare) {
    say(`not building the server for npm start: ${missing} (a production install: use npm run build's dist/server.mjs)`);
  } else if (missing) {
    say(
      `${missing}, so the server cannot be bundled: starting it from the sources through tsx (slower; dist/server.mjs from npm run build starts fastest)`,
    );
    await fromSources();
  } else {
    const started = performance.now();
    say(
      existsSync(MANIFEST)
        ? 'the sources changed since the last start: bundling the server again (esbuild) ...'
        : 'bundling the server from the sources for the first start (esbuild) ...',
    );
    try {
      build();
      say(`bundled in ${Math.round(performance.now() - started)} ms (${BUNDLE})`);
      bundle = BUNDLE;
    } catch (err) {
      // Never a failed install for it (the next start tries again), nor a start refused for it.
      say(`bundling failed: ${err instanceof Error ? err.message : String(err)}`);
      if (!prepare) {
        say('starting the server from the sources through tsx instead');
        await fromSources();
      }
    }
  }
}
if (bundle && !prepare) {
  // A cluster primary forks process.argv[1]: its server processes run the bundle directly.
  process.argv[1] = bundle;
  await import(pathToFileURL(bundle).href);
}
