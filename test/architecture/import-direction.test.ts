// The layer rules of README "Architecture": edge (HTTP) -> domain -> db, never upwards.
// KNOWN_LEAKS lists the imports that still break a rule; it may only shrink: a new leak
// fails this test, and so does a listed leak that is gone (delete its line).
import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { findViolations, findViolationsIn, folderCycles, importsOf, layerOf } from './layers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const KNOWN_LEAKS: string[] = [];

describe('import direction', () => {
  it('classifies files by folder', () => {
    expect(layerOf('src/placement/http/routes/traits.ts')).toBe('edge');
    expect(layerOf('src/placement/http/middleware.ts')).toBe('edge');
    expect(layerOf('src/cyborg/http/profile.ts')).toBe('edge');
    expect(layerOf('src/entry/node-service.ts')).toBe('edge');
    expect(layerOf('src/placement/writes/claims.ts')).toBe('domain');
    expect(layerOf('src/diagnostics/dashboard-repo.ts')).toBe('domain');
    expect(layerOf('src/http/auth.ts')).toBe('edge');
    expect(layerOf('src/placement/repo/traits.ts')).toBe('domain');
    expect(layerOf('src/placement/candidates/search.ts')).toBe('domain');
    expect(layerOf('src/db/client.ts')).toBe('db');
    expect(layerOf('src/shared/uuid.ts')).toBe('domain');
    expect(layerOf('src/entry/settings-check.ts')).toBe('edge');
    expect(layerOf('src/config.ts')).toBe('root');
    expect(layerOf('src/ext/taints/http/routes.ts')).toBe('edge');
    expect(layerOf('src/ext/taints/filter.ts')).toBe('domain');
    expect(layerOf('src/ext/taints/extension.ts')).toBe('root');
  });

  it('keeps src/shared a leaf: it imports only itself and the loose files of src/', () => {
    const ok = findViolationsIn({
      'src/shared/validation-messages.ts': "import { DomainError } from '../errors.js';\nimport { x } from './uuid.js';",
    });
    expect(ok).toEqual([]);
    const leak = findViolationsIn({ 'src/shared/uuid.ts': "import { MV } from '../placement/versions.js';" });
    expect(leak.map((v) => v.rule)).toEqual(['a shared leaf imports a folder of src/']);
    const edge = findViolationsIn({ 'src/shared/uuid.ts': "import { kit } from '../http/kit.js';" });
    expect(edge.map((v) => v.rule)).toEqual(['a shared leaf imports a folder of src/']);
  });

  it('flags the kit importing an API module and error handling outside the kit', () => {
    const kitLeak = findViolationsIn({ 'src/http/kit.ts': "import { MV } from '../placement/versions.js';" });
    expect(kitLeak.map((v) => v.rule)).toEqual(['the HTTP kit imports an API or domain module']);
    expect(findViolationsIn({ 'src/http/validate.ts': "import { pyRepr } from '../shared/validation-messages.js';" })).toEqual([]);
    const kitShared = findViolationsIn({ 'src/http/kit.ts': "import { isUuidLike } from '../shared/uuid.js';" });
    expect(kitShared.map((v) => v.rule)).toEqual(['the HTTP kit imports an API or domain module']);
    const ownOnError = findViolationsIn({ 'src/cyborg/http/profile.ts': "import { HTTPException } from 'hono/http-exception';" });
    expect(ownOnError.map((v) => v.rule)).toEqual(['handles HTTPException outside the HTTP kit']);
    const domainKit = findViolationsIn({ 'src/placement/capacity.ts': "import { httpKit } from '../http/kit.js';" });
    expect(domainKit.map((v) => v.rule)).toEqual(['domain imports edge']);
  });

  it('flags placement importing an extension: extensions plug into its hooks', () => {
    const found = findViolationsIn({ 'src/placement/writes/claims.ts': "import { countersHoldSql } from '../../ext/counters/sql.js';" });
    expect(found.map((v) => v.rule)).toEqual(['placement imports an extension']);
    const installed = findViolationsIn({
      'src/ext/counters/claim-guard.ts': "import type { ClaimGuard } from '../../placement/writes/kernel.js';",
    });
    expect(installed).toEqual([]);
  });

  it('flags any part but the extensions and their list importing an extension: removing one is deleting its folder and its line', () => {
    const found = findViolationsIn({
      'src/diagnostics/gang-diagnosis.ts': "import { searchDomains } from '../ext/gangs/index.js';",
      'src/diagnostics/admin-cli.ts': "import type { SimulationResponse } from '../ext/simulate/responses.js';",
    });
    expect(found.map((v) => `${v.file}: ${v.rule}`)).toEqual([
      'src/diagnostics/admin-cli.ts: imports an extension outside the list',
      'src/diagnostics/gang-diagnosis.ts: imports an extension outside the list',
    ]);
    const allowed = findViolationsIn({
      'src/extensions.ts': "import { gangs } from './ext/gangs/extension.js';",
      'src/ext/simulate/extension.ts': "import { gangs } from '../gangs/index.js';",
    });
    expect(allowed).toEqual([]);
  });

  it('flags every import that closes a cycle of src/ folders, however long, and nothing else', () => {
    const sources = {
      'src/a/one.ts': "import { b } from '../b/two.js';",
      'src/b/two.ts': "import { c } from '../c/three.js';\nimport { d } from '../d/four.js';",
      'src/c/three.ts': "import type { A } from '../a/one.js';",
      'src/d/four.ts': "import { config } from '../config.js';",
      'src/config.ts': "import { z } from 'zod';",
    };
    expect(folderCycles(sources).map((v) => `${v.file} -> ${v.imports}: ${v.rule}`)).toEqual([
      'src/a/one.ts -> src/b/two.ts: folder cycle: a, b, c',
      'src/b/two.ts -> src/c/three.ts: folder cycle: a, b, c',
      'src/c/three.ts -> src/a/one.ts: folder cycle: a, b, c',
    ]);
    expect(folderCycles({ 'src/a/one.ts': "import { b } from '../b/two.js';", 'src/b/two.ts': "import { x } from './x.js';" })).toEqual([]);
  });

  it('counts the loose files of src/ in the cycles, but for the composition types, which import types only and no extension', () => {
    // The cycle the Deps of old had: an extension typed by deps.ts, deps.ts typed by the extension's class.
    const throughConfig = folderCycles({
      'src/ext/limits/settings.ts': "import type { AppConfig } from '../../config.js';",
      'src/config.ts': "import { LIMITS_SETTINGS } from './ext/limits/settings.js';",
    });
    expect(throughConfig.map((v) => `${v.file} -> ${v.imports}: ${v.rule}`)).toEqual([
      'src/ext/limits/settings.ts -> src/config.ts: folder cycle: config.ts, ext',
      'src/config.ts -> src/ext/limits/settings.ts: folder cycle: config.ts, ext',
    ]);
    const hub = {
      'src/deps.ts': "import type { JobRegistry } from './jobs/registry.js';\nimport type { InstalledExtensions } from './extension.js';",
      'src/jobs/registry.ts': "import type { Deps } from '../deps.js';",
    };
    expect(findViolationsIn(hub)).toEqual([]);
    const named = findViolationsIn({ 'src/deps.ts': "import type { ProjectLimits } from './ext/limits/service.js';" });
    expect(named.map((v) => v.rule)).toEqual(['the composition types name an extension']);
    const value = findViolationsIn({ 'src/extension.ts': "import { stateKey } from './placement/keys.js';" });
    expect(value.map((v) => v.rule)).toEqual(['the composition types import a value']);
  });

  it('finds static, re-exported and dynamic imports', () => {
    const source =
      "import { a } from './a.js';\nimport type { B } from \"../b.js\";\nexport * from './c.js';\nconst d = await import('./d.js');";
    expect(importsOf(source)).toEqual(['./a.js', '../b.js', './c.js', './d.js']);
  });

  it('no lower layer imports a higher one beyond the known leaks', () => {
    const found = findViolations(ROOT).map((v) => `${v.file} -> ${v.imports}`);
    expect(
      found.filter((v) => !KNOWN_LEAKS.includes(v)),
      'new imports against the layer rules',
    ).toEqual([]);
    expect(
      KNOWN_LEAKS.filter((v) => !found.includes(v)),
      'fixed leaks still listed in KNOWN_LEAKS',
    ).toEqual([]);
  });
});
