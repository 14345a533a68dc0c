// Edge sites (docs/sites.md): the site-mode settings, validated with the rest
// of the configuration (the extension's `settings`, which src/config.ts adds to
// its schema). With PLACEMENT_SITE unset nothing changes; set, the instance
// serves one site: connected it is an ordinary instance on the primary
// (PLACEMENT_DB_URL), cut off it claims within its slice from a local file
// (PLACEMENT_SITE_DB_PATH). A combination that cannot work refuses the start
// with the setting named.
import * as z from 'zod';
import type { ExtensionSettingProblem } from '../../extension.js';
import { SITE_ID } from './schemas.js';

// Numbers and fractions are taken as text here and checked in sitesSettingsProblem: an
// unset site leaves every other setting of the extension meaningless, and refused by name.
export const SITES_SETTINGS = {
  /** The site this instance serves (site mode); unset: an ordinary instance. */
  PLACEMENT_SITE: z.string().optional(),
  /** The site's local libSQL file: its slice, its consumers and its journal, kept for when the primary is cut off. */
  PLACEMENT_SITE_DB_PATH: z.string().optional(),
  /** How long without an answer from the primary before the site counts itself cut off (partitioned). */
  PLACEMENT_SITE_PARTITION_AFTER_MS: z.string().optional(),
  /** How often the site asks the primary (a probe, and its slice's refresh while connected). */
  PLACEMENT_SITE_PROBE_MS: z.string().optional(),
  /** Rebalancing while connected: below this share of its slice left (per provider and class), it asks for more. */
  PLACEMENT_SITE_LOW_WATERMARK: z.string().optional(),
  /** ... above this share left, it gives some back. */
  PLACEMENT_SITE_HIGH_WATERMARK: z.string().optional(),
  /** ... by this many units each time (0: no rebalancing). */
  PLACEMENT_SITE_REBALANCE_STEP: z.string().optional(),
};

type SiteSettingName = keyof typeof SITES_SETTINGS;

/** Site mode's settings, parsed. */
export interface SiteSettings {
  site: string;
  dbPath: string;
  partitionAfterMs: number;
  probeMs: number;
  lowWatermark: number;
  highWatermark: number;
  rebalanceStep: number;
  /** Project limits are on (PLACEMENT_LIMITS): the site keeps its limit slices and claims within them while cut off. */
  limitsOn: boolean;
}

const DEFAULTS = {
  PLACEMENT_SITE_PARTITION_AFTER_MS: 5_000,
  PLACEMENT_SITE_PROBE_MS: 1_000,
  PLACEMENT_SITE_LOW_WATERMARK: 0.25,
  PLACEMENT_SITE_HIGH_WATERMARK: 0.75,
  PLACEMENT_SITE_REBALANCE_STEP: 0,
};

const textOf = (config: Readonly<Record<string, unknown>>, name: SiteSettingName): string | undefined => {
  const value = config[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
};

type Parsed = { settings: SiteSettings } | { problem: ExtensionSettingProblem } | { off: true };

function parse(config: Readonly<Record<string, unknown>>): Parsed {
  const site = textOf(config, 'PLACEMENT_SITE');
  const names = Object.keys(SITES_SETTINGS) as SiteSettingName[];
  if (site === undefined) {
    const stray = names.find((name) => textOf(config, name) !== undefined);
    if (stray === undefined) return { off: true };
    return {
      problem: {
        setting: stray,
        problem: 'is a site-mode setting, but PLACEMENT_SITE is not set',
        fix: `set PLACEMENT_SITE or unset ${stray}`,
      },
    };
  }
  if (!SITE_ID.test(site))
    return {
      problem: {
        setting: 'PLACEMENT_SITE',
        problem: `'${site}' is not a site name (letters, digits, '_', '.', '-', at most 64)`,
        fix: 'set PLACEMENT_SITE to the name its slice was given (PUT /ext/sites/{site})',
      },
    };
  const primary = typeof config.PLACEMENT_DB_URL === 'string' ? config.PLACEMENT_DB_URL : '';
  if (!/^(libsql|https?|wss?):\/\//.test(primary))
    return {
      problem: {
        setting: 'PLACEMENT_DB_URL',
        problem: 'a site instance needs the primary as a libSQL server (libsql://, http(s)://, ws(s)://), not an embedded file',
        fix: "set PLACEMENT_DB_URL to the primary's URL (the sqld every site shares)",
      },
    };
  const dbPath = textOf(config, 'PLACEMENT_SITE_DB_PATH');
  if (dbPath === undefined)
    return {
      problem: {
        setting: 'PLACEMENT_SITE_DB_PATH',
        problem: 'site mode needs a local libSQL file for its slice and its journal',
        fix: 'set PLACEMENT_SITE_DB_PATH to a file in a writable directory (/var/lib/placement-edge/site.db)',
      },
    };
  if (typeof config.PLACEMENT_WORKERS === 'number' && config.PLACEMENT_WORKERS !== 1)
    return {
      problem: {
        setting: 'PLACEMENT_WORKERS',
        problem: 'a site instance runs one server process (its partition state and journal are kept in it)',
        fix: 'set PLACEMENT_WORKERS=1',
      },
    };
  const numbers: Partial<Record<keyof typeof DEFAULTS, number>> = {};
  for (const name of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]) {
    const raw = textOf(config, name);
    const value = raw === undefined ? DEFAULTS[name] : Number(raw);
    const fraction = name.endsWith('WATERMARK');
    const ok = Number.isFinite(value) && (fraction ? value >= 0 && value <= 1 : Number.isInteger(value) && value >= 0);
    if (!ok || (name !== 'PLACEMENT_SITE_REBALANCE_STEP' && !fraction && value < 1))
      return {
        problem: {
          setting: name,
          problem: `'${raw}' is not ${fraction ? 'a fraction between 0 and 1' : 'a whole number'}`,
          fix: `set ${name} to ${fraction ? 'a fraction (0.25)' : 'a whole number'} or unset it for ${DEFAULTS[name]}`,
        },
      };
    numbers[name] = value;
  }
  const low = numbers.PLACEMENT_SITE_LOW_WATERMARK!;
  const high = numbers.PLACEMENT_SITE_HIGH_WATERMARK!;
  if (low >= high)
    return {
      problem: {
        setting: 'PLACEMENT_SITE_LOW_WATERMARK',
        problem: `${low} is not below PLACEMENT_SITE_HIGH_WATERMARK (${high})`,
        fix: 'set the low watermark below the high one',
      },
    };
  return {
    settings: {
      site,
      dbPath,
      partitionAfterMs: numbers.PLACEMENT_SITE_PARTITION_AFTER_MS!,
      probeMs: numbers.PLACEMENT_SITE_PROBE_MS!,
      lowWatermark: low,
      highWatermark: high,
      rebalanceStep: numbers.PLACEMENT_SITE_REBALANCE_STEP!,
      limitsOn: typeof config.PLACEMENT_LIMITS === 'string' && config.PLACEMENT_LIMITS !== 'off',
    },
  };
}

/** The first site setting that cannot work, or undefined (none set: nothing changes; an empty one is unset). */
export function sitesSettingsProblem(config: Readonly<Record<string, unknown>>): ExtensionSettingProblem | undefined {
  const parsed = parse(config);
  return 'problem' in parsed ? parsed.problem : undefined;
}

/** Site mode's settings, or null where PLACEMENT_SITE is unset (loadConfig has refused any that cannot work). */
export function siteSettings(config: Readonly<Record<string, unknown>>): SiteSettings | null {
  const parsed = parse(config);
  if ('problem' in parsed) throw new Error(`invalid configuration: ${parsed.problem.setting}: ${parsed.problem.problem}`);
  return 'settings' in parsed ? parsed.settings : null;
}
