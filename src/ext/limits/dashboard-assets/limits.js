// placement-edge dashboard: the projects at or over a limit (extension:
// project limits, GET /ext/limits). A part of the page (dom.js extend).
import { $, extend, fmt, h, plural } from './dom.js';

(() => {
  const ROWS_SHOWN = 10;

  extend({
    panel: 'limits-panel',
    source: '/ext/limits',
    fill(answer) {
      const projects = answer ? answer.projects : [];
      $('limits-count').textContent = answer
        ? `${plural(projects.length, 'project')} at or over a limit · from ${answer.source}${answer.read_at ? `, read ${new Date(answer.read_at).toLocaleTimeString()}` : ''}`
        : 'off';
      const rows = projects.flatMap((p) => Object.entries(p.limits).map(([rc, l]) => ({ project: p.project_id, rc, ...l })));
      $('limits').replaceChildren(rows.length
        ? h('table', { class: 'list limits' },
          h('thead', null, h('tr', null, h('th', null, 'project'), h('th', null, 'class'), h('th', { class: 'num' }, 'usage'), h('th', { class: 'num' }, 'limit'))),
          h('tbody', null, rows.slice(0, ROWS_SHOWN).map((r) => h('tr', { class: r.usage > r.limit ? 'expired' : '', 'data-project': r.project },
            h('td', { class: 'uuid' }, r.project),
            h('td', null, r.rc),
            h('td', { class: 'num' }, fmt(r.usage)),
            h('td', { class: 'num' }, fmt(r.limit))))))
        : h('div', { class: 'empty' }, answer ? 'No project is at a limit.' : 'Project limits are off (PLACEMENT_LIMITS).'));
    },
  });
})();
