// placement-edge dashboard: device taints (extension: taints, GET /ext/taints).
// Marks tainted providers on the trees (a tainted root takes its whole tree
// out of candidates, a tainted child only itself) and the devices whose
// deployable is one, and fills the drain list: each taint with the consumers
// still allocated on the provider. A part of the page (dom.js extend).
import { $, extend, fmt, h, page, plural } from './dom.js';

(() => {
  /** Rows of the drain list. */
  const TAINTS_SHOWN = 20;

  /** provider uuid -> its taints. */
  let taints = new Map();

  const describeTaint = (t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}${t.reason ? ` (${t.reason})` : ''}, since ${t.created_at}`;
  const badge = (list, title) => h('span', { class: 'badge taint', title }, `tainted ${[...new Set(list.map((t) => t.key))].join(', ')}`);

  extend({
    panel: 'taints-panel',
    source: '/ext/taints',

    read(drain) {
      taints = new Map();
      for (const entry of drain ? drain.taints : []) {
        if (!taints.has(entry.resource_provider_uuid)) taints.set(entry.resource_provider_uuid, []);
        taints.get(entry.resource_provider_uuid).push(entry.taint);
      }
    },

    provider(rp, inTaintedTree = false) {
      const mine = taints.get(rp.uuid) || [];
      const title = mine.length
        ? `${mine.map(describeTaint).join('\n')}\n${rp.parent_provider_uuid ? 'This provider' : 'Its whole tree'} takes part in no allocation candidate unless a request tolerates the key (ext_tolerate).`
        : '';
      return {
        classes: [mine.length ? 'tainted' : null, inTaintedTree ? 'in-tainted-tree' : null],
        badges: [
          mine.length ? badge(mine, title) : null,
          inTaintedTree ? h('span', { class: 'muted small', title: 'its root is tainted' }, 'root tainted') : null,
        ],
        down: inTaintedTree || (mine.length > 0 && !rp.parent_provider_uuid),
      };
    },

    /** Which device sits on a tainted provider: its deployables name their resource provider. */
    async devices() {
      if (!taints.size) return null;
      const { deployables } = await page.api('/accelerator/v2/deployables');
      const byDevice = new Map();
      for (const d of deployables) {
        const on = taints.get(d.rp_uuid);
        if (on && d.device_uuid) byDevice.set(d.device_uuid, [...(byDevice.get(d.device_uuid) || []), ...on]);
      }
      return (device) => {
        const list = byDevice.get(device.uuid) || [];
        return list.length ? [badge(list, list.map(describeTaint).join('\n'))] : [];
      };
    },

    /** The drain list: each taint with the consumers still allocated on the provider (a root: on its tree). */
    fill(drain) {
      const entries = drain ? drain.taints : [];
      const consumers = new Set(entries.flatMap((e) => e.consumers));
      $('taints-count').textContent = drain
        ? `${plural(taints.size, 'provider')} · ${plural(consumers.size, 'consumer')} still on them`
        : 'not available';
      $('taints').replaceChildren(entries.length
        ? h('table', { class: 'list taints' },
          h('thead', null, h('tr', null, h('th', null, 'provider'), h('th', null, 'taint'), h('th', null, 'reason'), h('th', { class: 'num' }, 'consumers'))),
          h('tbody', null, entries.slice(0, TAINTS_SHOWN).map((e) => h('tr', { 'data-uuid': e.resource_provider_uuid },
            h('td', null, h('button', { type: 'button', class: 'link', title: `show ${e.resource_provider_uuid}`, onclick: () => page.setFilter('name', e.resource_provider_uuid) },
              e.resource_provider_name)),
            h('td', { class: 'class-name', title: `since ${e.taint.created_at}` }, `${e.taint.key}${e.taint.value ? `=${e.taint.value}` : ''}:${e.taint.effect}`),
            h('td', { class: 'small' }, e.taint.reason),
            h('td', { class: 'num', title: e.consumers.join('\n') }, fmt(e.consumers.length))))))
        : h('div', { class: 'empty ok' }, drain ? 'No provider is tainted.' : 'The extensions API did not answer.'));
    },
  });
})();
