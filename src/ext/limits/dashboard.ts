// Project limits on the capacity dashboard: the panel of the projects at a limit.
import type { DashboardPanel } from '../../diagnostics/dashboard-repo.js';

/** Its panel on the dashboard page: the projects at or over a limit (dashboard-assets/limits.js fills it; 'off' where PLACEMENT_LIMITS is). */
export const limitsPanel: DashboardPanel = {
  slot: 'columns',
  html: `  <section class="panel" id="limits-panel">
    <h2>Project limits <span class="muted small" id="limits-count"></span></h2>
    <div id="limits"></div>
  </section>`,
};
