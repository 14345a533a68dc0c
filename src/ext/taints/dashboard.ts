// Taints on the capacity dashboard: the drain list's panel.
import type { DashboardPanel } from '../../diagnostics/dashboard-repo.js';

/** Its panel on the dashboard page: the drain list (dashboard-assets/taints.js fills it, and marks tainted providers on the trees and their devices). */
export const taintsPanel: DashboardPanel = {
  slot: 'columns',
  html: `  <section class="panel" id="taints-panel">
    <h2>Tainted providers <span class="muted small" id="taints-count"></span></h2>
    <div id="taints"></div>
  </section>`,
};
