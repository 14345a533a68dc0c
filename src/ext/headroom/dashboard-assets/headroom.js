// placement-edge dashboard: headroom (extension: headroom, GET
// /ext/headroom): the operator types a candidates query and sees how many
// more of it fit now, per tree. A part of the page (dom.js extend).
import { $, extend, fmt, h, page, plural } from './dom.js';

(() => {
  const TREES_SHOWN = 20;

  /** Names of the trees a headroom answer counts: from the page, else one GET each. */
  async function providerNames(uuids) {
    await Promise.all(uuids.filter((u) => !page.names.has(u)).map(async (u) => {
      const rp = await page.api(`/resource_providers/${u}`).catch(() => null);
      if (rp) page.names.set(u, rp.name);
    }));
    return (u) => page.names.get(u) || u;
  }

  async function runHeadroom() {
    const raw = $('headroom-query').value.trim();
    // A whole candidates URL, a query string with its "?", or the bare query string.
    const query = raw.includes('?') ? raw.slice(raw.indexOf('?') + 1) : raw;
    $('headroom-error').textContent = '';
    if (!query) { $('headroom').replaceChildren(); return; }
    $('headroom').replaceChildren(h('div', { class: 'muted' }, 'counting…'));
    try {
      const result = await page.api(`/ext/headroom?${query}`);
      const trees = [...result.trees].sort((a, b) => b.count - a.count || a.root_provider_uuid.localeCompare(b.root_provider_uuid));
      const shown = trees.slice(0, TREES_SHOWN);
      const nameOf = await providerNames(shown.map((t) => t.root_provider_uuid));
      // replaceChildren() would write a null as the text "null": h() drops it.
      $('headroom').replaceChildren(h('div', null,
        h('div', { class: 'headline', 'data-total': result.total },
          result.total ? [h('b', null, fmt(result.total)), ` more fit, in ${plural(trees.length, 'tree')}`] : 'Nothing fits: no tree can take this request now.',
          h('span', { class: 'muted small' }, ` · as of ${new Date().toLocaleTimeString()}`)),
        result.incomplete ? h('div', { class: 'error small' }, 'The search ran out of its time budget: these counts are lower bounds.') : null,
        shown.length
          ? h('table', { class: 'list headroom' },
            h('thead', null, h('tr', null, h('th', null, 'tree'), h('th', { class: 'num' }, 'fit'))),
            h('tbody', null, shown.map((t) => h('tr', { 'data-uuid': t.root_provider_uuid },
              h('td', null, h('button', { type: 'button', class: 'link', title: `show ${t.root_provider_uuid}`, onclick: () => page.setFilter('name', t.root_provider_uuid) },
                nameOf(t.root_provider_uuid))),
              h('td', { class: 'num' }, fmt(t.count))))))
          : null,
        trees.length > shown.length ? h('div', { class: 'muted small' }, `the ${shown.length} trees with the most room shown`) : null));
    } catch (err) {
      if (page.signedOut(err)) return;
      $('headroom').replaceChildren();
      $('headroom-error').textContent = err.message;
    }
  }

  extend({
    panel: 'headroom-panel',
    start() {
      $('headroom-form').addEventListener('submit', (e) => { e.preventDefault(); runHeadroom(); });
    },
  });
})();
