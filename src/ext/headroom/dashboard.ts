// Headroom on the capacity dashboard: its panel, where the operator asks how
// many more of a request fit.
import type { DashboardPanel } from '../../diagnostics/dashboard-repo.js';

/** Its panel on the dashboard page: the operator types a candidates query and sees how many more fit per tree (dashboard-assets/headroom.js fills it). */
export const headroomPanel: DashboardPanel = {
  slot: 'top',
  html: `  <section class="panel" id="headroom-panel">
    <h2>Headroom <span class="muted small">how many more of a request fit now, per tree, each claim taking the first candidate (GET /ext/headroom)</span></h2>
    <form id="headroom-form" class="filters" autocomplete="off">
      <input id="headroom-query" name="q" type="text" size="70" placeholder="resources=VCPU:2,MEMORY_MB:4096&amp;required=HW_CPU_X86_AVX2" aria-label="allocation candidates query">
      <button type="submit">How many fit?</button>
      <span id="headroom-error" class="error" role="alert"></span>
    </form>
    <div id="headroom"></div>
  </section>`,
};
