// Project limits enforced inside the claim (docs/limits.md): PLACEMENT_LIMITS
// names where they are read from (off: not set up; the parameter is still
// taken, and acts on nothing). The whole extension: its parameter and gate
// (params.ts), its rule declared once (declaration.ts), its claim guard (guard.ts), its source and ledger (service.ts,
// keystone.ts, sql.ts), its periodic refresh and its routes (http/routes.ts).
import { type Extension, withState } from '../../extension.js';
import type { ProjectConstraint } from '../../placement/capacity.js';
import { limitsPanel } from './dashboard.js';
import { DASHBOARD_ASSETS } from './dashboard-assets.generated.js';
import { PROJECT_LIMITS } from './declaration.js';
import { limitsWrites } from './guard.js';
import { KeystoneLimitsReader } from './http/keystone-limits.js';
import { limitRoutes } from './http/routes.js';
import { withinLimitsDiagnosis, withinLimitsGate, withinLimitsParam } from './params.js';
import { LIMITS, limitsConfigOf, projectLimits } from './service.js';
import { LIMITS_SETTINGS, limitsSettingsProblem } from './settings.js';

/** The extension enforcing `declaration` (the project limits' own; a test declares another). */
export const limitsExtension = (declaration: ProjectConstraint): Extension => ({
  name: LIMITS.extension,
  settings: { shape: LIMITS_SETTINGS, problem: (config) => limitsSettingsProblem(limitsConfigOf(config)) },
  params: [withinLimitsParam],
  diagnosis: withinLimitsDiagnosis,
  routes: [limitRoutes],
  dashboard: { panels: [limitsPanel], assets: DASHBOARD_ASSETS },
  // Read again once PLACEMENT_LIMITS_REFRESH_SECONDS have passed since the last try, where the sweeps run (once per service).
  jobs: { handlers: {}, sweeps: [withState(LIMITS, (state) => state.refreshIfDue())] },
  setUp({ store, config, log, metrics, keystoneFetch }) {
    const settings = limitsConfigOf(config);
    // PLACEMENT_LIMITS=keystone: read through the service's one Keystone client (settings checked at start).
    const keystone =
      settings.PLACEMENT_LIMITS === 'keystone'
        ? new KeystoneLimitsReader({
            authUrl: settings.PLACEMENT_KEYSTONE_AUTH_URL!,
            username: settings.PLACEMENT_KEYSTONE_USERNAME!,
            password: settings.PLACEMENT_KEYSTONE_PASSWORD!,
            userDomainName: settings.PLACEMENT_KEYSTONE_USER_DOMAIN_NAME,
            service: settings.PLACEMENT_LIMITS_SERVICE,
            region: settings.PLACEMENT_LIMITS_REGION,
            timeoutMs: settings.PLACEMENT_KEYSTONE_TIMEOUT_MS,
            fetcher: keystoneFetch,
          })
        : undefined;
    const state = projectLimits(store, settings, log, keystone, declaration);
    if (!state) return null;
    return {
      state,
      writes: limitsWrites(state, metrics),
      gates: [withinLimitsGate(state)],
      // The usage ledger installed and the limits read before any claim; unreadable as configured, the start is refused.
      start: () => state.start(),
      // The cron refreshes them; the first isolate of a database never read them reads them now.
      startIsolate: async () => {
        await state.prepare();
        if ((await state.readAt()) === null) await state.start();
      },
      // Not read for two refresh intervals (Keystone down) says so; they stay enforced.
      readiness: () => state.readiness(),
    };
  },
});

export const limits = limitsExtension(PROJECT_LIMITS);
