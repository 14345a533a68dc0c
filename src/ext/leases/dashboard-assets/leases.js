// placement-edge dashboard: the leases held (extension: leases, GET
// /ext/leases), soonest expiry first; an expired one waits for the next
// sweep to release its allocations. A part of the page (dom.js extend).
import { $, extend, fmt, h, plural } from './dom.js';

(() => {
  const LEASES_SHOWN = 10;

  extend({
    panel: 'leases-panel',
    source: '/ext/leases',
    fill(list, summary) {
      const now = Date.parse(summary.generated_at);
      const leases = list ? list.leases : [];
      const expired = leases.filter((l) => Date.parse(l.expires_at) <= now).length;
      $('leases-count').textContent = list
        ? `${plural(leases.length, 'lease')} held${expired ? ` · ${fmt(expired)} expired, released by the next sweep` : ''}`
        : 'not available';
      const when = (l) => {
        const seconds = Math.round((Date.parse(l.expires_at) - now) / 1000);
        return seconds > 0 ? `in ${fmt(seconds)} s` : `expired ${fmt(-seconds)} s ago`;
      };
      $('leases').replaceChildren(leases.length
        ? h('table', { class: 'list leases' },
          h('thead', null, h('tr', null, h('th', null, 'consumer'), h('th', null, 'expires'), h('th', { class: 'num' }, 'lease'))),
          h('tbody', null, leases.slice(0, LEASES_SHOWN).map((l) => h('tr', { class: Date.parse(l.expires_at) <= now ? 'expired' : '', 'data-consumer': l.consumer_uuid },
            h('td', { class: 'uuid' }, l.consumer_uuid),
            h('td', { title: l.expires_at }, when(l)),
            h('td', { class: 'num' }, `${fmt(l.seconds)} s`)))))
        : h('div', { class: 'empty' }, list ? 'No allocation is waiting to be confirmed.' : 'The extensions API did not answer.'));
    },
  });
})();
