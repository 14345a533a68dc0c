// Site mode in one app (docs/sites.md): the site's local file and its
// SiteMode, built by the extension's setUp where PLACEMENT_SITE is set,
// started with the app's Deps (the replays write through the app's write
// hooks), and what it shows: /readyz holds while partitioned, gauges in /metrics.
import type { SetAsideConstraint } from '../../placement/capacity.js';
import type { DataStore } from '../../db/client.js';
import type { Deps, Logger } from '../../deps.js';
import { stateKey } from '../../extension.js';
import { LocalSiteFile } from './local.js';
import type { SiteSettings } from './settings.js';
import { type SiteGauges, SiteMode, type SiteStatus } from './site-mode.js';

export interface SiteRuntime {
  mode: SiteMode;
  local: LocalSiteFile;
  start(deps: Deps): Promise<void>;
  stop(): void;
}

export const SITE_STATE = stateKey<SiteRuntime>('sites');

/** The readiness hold's name while the site is partitioned. */
const READINESS_HOLD = 'site-partitioned';

export function startSiteMode(
  settings: SiteSettings,
  primary: DataStore,
  held: SetAsideConstraint,
  log: Logger,
  gauges?: SiteGauges,
): SiteRuntime {
  const local = new LocalSiteFile(settings.dbPath);
  const mode = new SiteMode({ settings, primary, held, local, log, gauges });
  return {
    mode,
    local,
    async start(deps) {
      await local.ready;
      mode.onLinkChange = (link, status) => {
        if (link === 'connected') deps.readiness.release(READINESS_HOLD);
        else
          deps.readiness.hold(
            READINESS_HOLD,
            `site ${status.site} is partitioned from the primary since ${status.since}: claims within its slice only (journal depth ${status.journalDepth})`,
          );
      };
      await mode.start({ store: deps.store, writeHooks: deps.writeHooks, metrics: deps.metrics });
    },
    stop() {
      mode.stop();
      local.close();
    },
  };
}

/** A registry's gauges, as the service's metrics registry makes them (a structural type: no import of observability). */
interface GaugeMaker {
  gauge(name: string, help: string, labelNames?: readonly string[]): { set(values: string[], value: number): void };
}

export function siteGauges(registry: GaugeMaker): SiteGauges {
  const partitioned = registry.gauge(
    'placement_ext_site_partitioned',
    'Extension (sites): 1 while this site is cut off from the primary, 0 connected.',
    ['site'],
  );
  const depth = registry.gauge('placement_ext_site_journal_depth', 'Extension (sites): journal entries the primary has not applied yet.', [
    'site',
  ]);
  const replayed = registry.gauge(
    'placement_ext_site_last_replayed_seq',
    'Extension (sites): the last journal entry the primary has applied.',
    ['site'],
  );
  const conflicts = registry.gauge(
    'placement_ext_site_replay_conflicts',
    'Extension (sites): journal entries the primary refused since the start.',
    ['site'],
  );
  const remaining = registry.gauge(
    'placement_ext_site_slice_remaining',
    "Extension (sites): what is left of the site's slice per provider and class, as the site knows it.",
    ['site', 'resource_provider', 'resourcetype'],
  );
  return {
    changed(status: SiteStatus) {
      partitioned.set([status.site], status.link === 'partitioned' ? 1 : 0);
      depth.set([status.site], status.journalDepth);
      replayed.set([status.site], status.lastReplayedSeq);
      conflicts.set([status.site], status.replayConflicts);
      for (const [provider, { resources }] of Object.entries(status.sliceRemaining))
        for (const [rc, n] of Object.entries(resources)) remaining.set([status.site, provider, rc], n);
    },
  };
}
