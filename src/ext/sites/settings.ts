// Edge sites (docs/sites.md): the site-mode settings. Site mode (an instance
// that keeps placing within its slice while cut off from the primary) is not
// built yet, so a start that asks for it is refused rather than run as an
// ordinary instance that would place nothing while cut off.
import { SettingProblem } from '../../shared/setting-problem.js';

export const SITE_SETTINGS = ['PLACEMENT_SITE', 'PLACEMENT_SITE_PARTITION_AFTER_MS'] as const;

/** The first site setting that cannot work, or null (none set: nothing changes). */
export function sitesSettingsProblem(env: Record<string, string | undefined>): SettingProblem | null {
  const set = SITE_SETTINGS.find((name) => env[name] !== undefined && env[name] !== '');
  if (set === undefined) return null;
  return new SettingProblem(
    set,
    'site mode (claims within a slice while cut off from the primary) is not built in this version; only slices on the primary are (PUT /ext/sites/{site}, docs/sites.md)',
    `unset ${set}`,
  );
}
