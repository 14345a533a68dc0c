// Leases on the capacity dashboard: the panel of the leases held.
import type { DashboardPanel } from '../../diagnostics/dashboard-repo.js';

/** Its panel on the dashboard page: the leases held (dashboard-assets/leases.js fills it). */
export const leasesPanel: DashboardPanel = {
  slot: 'columns',
  html: `  <section class="panel" id="leases-panel">
    <h2>Allocation leases <span class="muted small" id="leases-count"></span></h2>
    <div id="leases"></div>
  </section>`,
};
