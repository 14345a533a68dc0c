// placement-edge dashboard: shared counters (extension: counters, the
// summary's `counters` of a provider): one bar per counter under the
// provider's inventory, its load against its total. A part of the page (dom.js extend).
import { extend, fmt, h, page } from './dom.js';

(() => {
  extend({
    rows(rp) {
      return Object.entries(rp.counters || {}).map(([name, c]) => h('tr', { class: `counter${c.load > c.total ? ' over' : ''}`, 'data-counter': name },
        h('td', { title: 'shared counter' }, `⧉ ${name}`),
        h('td', { class: 'bar-cell' }, page.meter(c.load, c.total)),
        h('td', { class: 'num' }, `${fmt(c.load)} / ${fmt(c.total)}`),
        h('td', { class: 'num' }, c.load > c.total ? `${fmt(c.load - c.total)} over` : `${fmt(c.total - c.load)} free`),
        h('td', { class: 'num muted physical' }, '')));
    },
  });
})();
