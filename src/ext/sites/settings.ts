// Edge sites (docs/sites.md): the site-mode settings, validated with the rest
// of the configuration (the extension's `settings`, which src/config.ts adds to
// its schema). Site mode (an instance that keeps placing within its slice while
// cut off from the primary) is not built yet, so a start that asks for it is
// refused rather than run as an ordinary instance that would place nothing
// while cut off.
import { z } from 'zod';
import type { ExtensionSettingProblem } from '../../extension.js';

// Taken as any text: a set one is refused as not built, whatever its value.
export const SITES_SETTINGS = {
  /** The site this instance would serve in site mode (not built). */
  PLACEMENT_SITE: z.string().optional(),
  /** How long without the primary before a site instance counts itself cut off (not built). */
  PLACEMENT_SITE_PARTITION_AFTER_MS: z.string().optional(),
};

const SITE_SETTINGS = Object.keys(SITES_SETTINGS) as (keyof typeof SITES_SETTINGS)[];

/** The first site setting that cannot work, or undefined (none set: nothing changes; an empty one is unset). */
export function sitesSettingsProblem(config: Readonly<Record<string, unknown>>): ExtensionSettingProblem | undefined {
  const set = SITE_SETTINGS.find((name) => typeof config[name] === 'string' && config[name] !== '');
  if (set === undefined) return undefined;
  return {
    setting: set,
    problem:
      'site mode (claims within a slice while cut off from the primary) is not built in this version; only slices on the primary are (PUT /ext/sites/{site}, docs/sites.md)',
    fix: `unset ${set}`,
  };
}
