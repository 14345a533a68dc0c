// What if on the capacity dashboard: its panel and the script that runs it.
import type { DashboardPanel } from '../../diagnostics/dashboard-repo.js';

/** Its panel on the dashboard page: a change tried on a copy of the cloud (dashboard-assets/what-if.js fills it). */
export const whatIfPanel: DashboardPanel = {
  slot: 'top',
  html: `  <section class="panel" id="what-if-panel">
    <h2>What if <span class="muted small">a change tried on a copy of the cloud: headroom and figures before and after, who no longer fits (POST /ext/simulate; nothing is written)</span></h2>
    <form id="what-if-form" class="filters" autocomplete="off">
      <select id="what-if-kind" aria-label="change">
        <option value="ratio">allocation ratio on an aggregate</option>
        <option value="remove-trait">remove the providers with a trait</option>
        <option value="resize">resize a flavor</option>
        <option value="add-like">add hosts like one</option>
      </select>
      <span data-kind="ratio"><input id="what-if-aggregate" size="36" placeholder="aggregate uuid" aria-label="aggregate uuid">
        <input id="what-if-class" size="10" value="VCPU" aria-label="resource class"> ratio
        <input id="what-if-ratio" type="number" min="0.01" step="any" size="5" value="4.0" aria-label="allocation ratio"></span>
      <span data-kind="remove-trait" hidden><input id="what-if-trait" list="trait-list" placeholder="trait, e.g. CUSTOM_RACK_7" aria-label="trait"></span>
      <span data-kind="resize" hidden>from <input id="what-if-from" placeholder="VCPU:4,MEMORY_MB:8192" aria-label="flavor from">
        to <input id="what-if-to" placeholder="VCPU:8,MEMORY_MB:8192" aria-label="flavor to"></span>
      <span data-kind="add-like" hidden><input id="what-if-count" type="number" min="1" max="10000" size="4" value="10" aria-label="how many">
        more like <input id="what-if-like" placeholder="host name or uuid" aria-label="host like"></span>
      <input id="what-if-query" type="text" size="44" placeholder="query: resources=VCPU:2,MEMORY_MB:4096" aria-label="query to measure">
      <button type="submit">What if?</button>
      <span id="what-if-error" class="error" role="alert"></span>
    </form>
    <div id="what-if"></div>
  </section>`,
};
