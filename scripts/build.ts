// `npm run build`: the programs an operator installs, each one file that
// runs with plain `node` (20+), no tsx and no checkout:
//   dist/server.mjs          the Node-mode service (`npm start` without the transpiler)
//   dist/placement-agent.mjs the host agent
//   dist/placement-admin.mjs the operator's audit (and monitoring check)
// Everything is bundled except libSQL's native binding (`libsql`, which loads
// a per-platform .node file); dist/package.json pins it, so
// `npm install --omit=dev` inside dist/ (or `npm install -g ./dist`) installs
// only that. Migrations travel inside the server bundle
// (src/db/migrations.generated.ts), the provider-config JSON Schema inside the agent's.
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Packages left out of the bundles and resolved from node_modules at run time. */
export const EXTERNAL_PACKAGES = ['libsql'] as const;

export const ENTRY_POINTS = {
  server: 'src/entry/node.ts',
  'placement-agent': 'agent/src/cli.ts',
  'placement-admin': 'src/entry/admin.ts',
} as const;

// `z.locales` re-exports every translation of zod's messages (half of zod's
// size in a bundle, parsed at every start); nothing here switches locale, and
// the default English one is imported by zod itself, so only it is kept.
const zodEnglishOnly: Plugin = {
  name: 'zod-english-only',
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: dirname(args.path),
      loader: 'js',
    }));
  },
};

// V8 keeps a module's source text for as long as the module lives, at one byte a character
// only while every character is Latin-1: a single one above that anywhere stores the whole
// bundle at two bytes a character, ~2 MiB more in every process. esbuild escapes strings,
// templates and regular expressions (charset ascii) but keeps comments as they are, and
// zod has an em dash in one. Each such character is written as its \uXXXX escape, which
// means the same character in any string, template, regular expression or identifier,
// and is only text in a comment.
const latin1Source: Plugin = {
  name: 'latin1-source',
  setup(b) {
    b.initialOptions.metafile = true;
    b.onEnd((result) => {
      for (const file of Object.keys(result.metafile?.outputs ?? {})) {
        const path = join(ROOT, file);
        const text = readFileSync(path, 'utf8');
        const latin1 = escapeAboveLatin1(text);
        if (latin1 !== text) writeFileSync(path, latin1);
      }
    });
  },
};

/** `text` with every UTF-16 unit above U+00FF as a \uXXXX escape. */
export function escapeAboveLatin1(text: string): string {
  return text.replace(/[\u0100-\uffff]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export interface BuildResult {
  outdir: string;
  files: string[];
}

/** esbuild's options for `entryPoints` into `outdir`: the same for dist/ and for `npm start`'s bundle. */
function bundleOptions(entryPoints: Record<string, string>, outdir: string): BuildOptions {
  return {
    absWorkingDir: ROOT,
    entryPoints,
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    // Bundled CommonJS modules call require() for Node built-ins and the
    // external binding; ESM output has no require, so give them one.
    banner: {
      js: [
        '#!/usr/bin/env node',
        "import { createRequire as __placementEdgeCreateRequire } from 'node:module';",
        'const require = __placementEdgeCreateRequire(import.meta.url);',
      ].join('\n'),
    },
    external: [...EXTERNAL_PACKAGES],
    plugins: [zodEnglishOnly, latin1Source],
    legalComments: 'none',
    logLevel: 'warning',
  };
}

export async function buildDist(outdir = join(ROOT, 'dist')): Promise<BuildResult> {
  await build(bundleOptions(ENTRY_POINTS, outdir));

  const rootPackage = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; engines: Record<string, string> };
  writeFileSync(join(outdir, 'package.json'), `${JSON.stringify(distPackage(rootPackage), null, 2)}\n`);
  const files = Object.keys(ENTRY_POINTS).map((name) => join(outdir, `${name}.mjs`));
  for (const file of files) chmodSync(file, 0o755);
  return { outdir, files: [...files, join(outdir, 'package.json')] };
}

/** The installable package dist/ becomes: the bins and the native binding, nothing else. */
function distPackage(root: { version: string; engines: Record<string, string> }): Record<string, unknown> {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  const dependencies = Object.fromEntries(
    EXTERNAL_PACKAGES.map((name) => {
      const version = lock.packages[`node_modules/${name}`]?.version;
      if (!version) throw new Error(`${name} is not in package-lock.json`);
      return [name, version];
    }),
  );
  return {
    name: 'placement-edge-dist',
    version: root.version,
    private: true,
    description: 'placement-edge server and host agent, bundled (built by npm run build)',
    type: 'module',
    engines: root.engines,
    bin: { 'placement-edge': 'server.mjs', 'placement-agent': 'placement-agent.mjs', 'placement-admin': 'placement-admin.mjs' },
    dependencies,
  };
}

/**
 * `npm start`'s bundle (scripts/start.mjs): the server alone into `outdir`/server.mjs, and
 * `outdir`/inputs.json listing the files it was built from outside node_modules (from esbuild's
 * metafile), so a start can tell whether the sources changed since.
 */
export async function buildStartBundle(outdir: string): Promise<void> {
  const result = await build({ ...bundleOptions({ server: ENTRY_POINTS.server }, outdir), metafile: true });
  const inputs = Object.keys(result.metafile.inputs)
    .filter((path) => !path.startsWith('node_modules/'))
    .sort();
  writeFileSync(join(outdir, 'inputs.json'), `${JSON.stringify(inputs)}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1] && process.argv[2] === '--start-bundle') {
  await buildStartBundle(process.argv[3]!);
} else if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now();
  const { files } = await buildDist();
  console.log(`built ${files.map((f) => f.slice(ROOT.length)).join(', ')} in ${Math.round(performance.now() - started)} ms`);
}
