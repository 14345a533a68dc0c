// placement-edge dashboard: aggregates as gang domains (extension: gangs, the
// summary's `domains` section): their hosts, how many are free (no
// allocation in the tree), the free ones by name; a click shows the domain's
// trees. A part of the page (dom.js extend).
import { $, extend, fmt, h, page, plural } from './dom.js';

(() => {
  extend({
    panel: 'domains-panel',
    fill(_answer, summary) {
      const { items, total } = summary.domains;
      $('domains-count').textContent = total
        ? `${plural(total, 'aggregate')} with hosts${total > items.length ? ` · the ${items.length} with most free hosts shown` : ''}`
        : '';
      $('domains').replaceChildren(items.length
        ? h('table', { class: 'list domains' },
          h('thead', null, h('tr', null, h('th', null, 'aggregate'), h('th', { class: 'num' }, 'hosts'), h('th', { class: 'num' }, 'free'), h('th', null, 'free hosts'))),
          h('tbody', null, items.map((d) => h('tr', { 'data-aggregate': d.uuid },
            h('td', null, h('button', { type: 'button', class: 'link uuid', title: `show the trees in ${d.uuid}`, onclick: () => page.setFilter('aggregate', d.uuid) }, d.uuid)),
            h('td', { class: 'num' }, fmt(d.hosts)),
            h('td', { class: 'num' }, fmt(d.free_hosts)),
            h('td', { class: 'muted small' }, d.free_host_names.join(', ') + (d.free_hosts > d.free_host_names.length ? ', …' : ''))))))
        : h('div', { class: 'empty' }, 'No aggregate has a host: gangs have no domain (GET /ext/gang_candidates?ext_domain=any still works).'));
    },
  });
})();
