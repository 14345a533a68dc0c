// Holds on the capacity dashboard: the time line's panel, its script and stylesheet.
import type { DashboardPanel } from '../../diagnostics/dashboard-repo.js';

/** Its panel on the dashboard page: the time line of holds (dashboard-assets/holds.js fills it, holds.css styles it). */
export const holdsPanel: DashboardPanel = {
  slot: 'timeline',
  html: `  <section class="panel" id="holds-panel">
    <h2>Holds <span class="muted small">capacity held for a window, per aggregate: drawn / held per class, now marked (GET /ext/holds/timeline) <span id="holds-count"></span></span></h2>
    <div id="holds-timeline"></div>
  </section>`,
};
