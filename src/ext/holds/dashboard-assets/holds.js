// placement-edge dashboard: the time line of holds (extension: holds,
// GET /ext/holds/timeline). Bars per provider, grouped per aggregate, from
// the soonest start to the latest end; each bar says what its hold holds and
// what claims drawn from it use now; a line marks now. Self-contained: it
// reloads whenever the page's own refresh finishes (the status line says
// "updated"), with the page's token. Loaded as a module script (before
// app.js, so it watches the status line before the first refresh ends).
import { $, fmt, h, plural, token } from './dom.js';

(() => {
  /** An end further than this past the last finite one is drawn as open (a site's slice never ends). */
  const OPEN_END = Date.parse('9000-01-01T00:00:00Z');
  const HOUR = 3_600_000;
  const DAY = 24 * HOUR;


  const when = (ms) => new Date(ms).toISOString().replace('T', ' ').replace(/:\d\d\.\d+Z$/, ' UTC');

  async function load() {
    const signedIn = token();
    if (!signedIn) return null;
    const res = await fetch('/ext/holds/timeline', {
      headers: { accept: 'application/json', 'x-auth-token': signedIn, 'openstack-api-version': 'placement latest' },
      cache: 'no-store',
    });
    if (!res.ok) return { unavailable: `${res.status} ${res.statusText}` };
    return res.json();
  }

  /** The axis: from now (or the soonest active start) to the latest finite end (an hour past now at least). */
  function axisOf(timeline) {
    const now = Date.parse(timeline.now);
    let from = now;
    let to = now + HOUR;
    let finite = false;
    for (const g of timeline.groups)
      for (const p of g.providers)
        for (const hold of p.holds) {
          from = Math.min(from, Date.parse(hold.start));
          const end = Date.parse(hold.end);
          if (end < OPEN_END) { to = Math.max(to, end); finite = true; }
        }
    // Only open windows: a day ahead. A little room before the first start, so now is never on the edge.
    if (!finite) to = Math.max(to, now + DAY);
    const pad = (to - from) * 0.02;
    return { now, from: from - pad, to: to + pad };
  }

  const at = (axis, ms) => `${Math.max(0, Math.min(100, (100 * (ms - axis.from)) / (axis.to - axis.from)))}%`;

  function bar(axis, hold) {
    const start = Date.parse(hold.start);
    const end = Date.parse(hold.end);
    const open = end >= OPEN_END;
    const classes = Object.entries(hold.resources);
    const label = classes.map(([rc, r]) => `${rc} ${fmt(r.drawn)}/${fmt(r.held)}`).join(', ');
    // The drawn share of the most-drawn class fills the bar from its left.
    const share = Math.max(0, ...classes.map(([, r]) => (r.held > 0 ? Math.min(1, r.drawn / r.held) : 0)));
    const active = start <= axis.now && axis.now < end;
    return h('div', {
      class: `hold-bar${active ? ' active' : ''}${open ? ' open' : ''}`,
      'data-hold': hold.uuid,
      'data-held': classes.map(([rc, r]) => `${rc}:${r.held}`).join(','),
      'data-drawn': classes.map(([rc, r]) => `${rc}:${r.drawn}`).join(','),
      title: `hold ${hold.uuid}\nproject ${hold.project_id}\n${when(start)} → ${open ? 'open' : when(end)} (end_action ${hold.end_action})\n` +
        classes.map(([rc, r]) => `${rc}: ${fmt(r.held)} held, ${fmt(r.drawn)} drawn`).join('\n'),
      style: { left: at(axis, start), width: `calc(${at(axis, open ? axis.to : end)} - ${at(axis, start)})` },
    },
    h('div', { class: 'hold-drawn', style: { width: `${(100 * share).toFixed(1)}%` } }),
    h('span', { class: 'hold-label' }, `${hold.project_id} · ${label}`));
  }

  function render(timeline) {
    const panel = $('holds-timeline');
    if (!panel) return;
    if (!timeline || timeline.unavailable) {
      $('holds-count').textContent = '';
      panel.replaceChildren(h('div', { class: 'empty' }, timeline ? 'Holds are not available here.' : ''));
      return;
    }
    const holds = new Set();
    let providers = 0;
    for (const g of timeline.groups) for (const p of g.providers) { providers += 1; for (const hold of p.holds) holds.add(hold.uuid); }
    $('holds-count').textContent = holds.size
      ? `${plural(holds.size, 'hold')} on ${plural(providers, 'provider row')}${timeline.truncated ? ' · more than shown' : ''}`
      : '';
    if (!holds.size) {
      panel.replaceChildren(h('div', { class: 'empty' }, 'No capacity is held.'));
      return;
    }
    const axis = axisOf(timeline);
    const nowLine = () => h('div', { class: 'hold-now', style: { left: at(axis, axis.now) } });
    panel.replaceChildren(
      h('div', { class: 'hold-axis' },
        h('span', { class: 'muted small' }, when(axis.from)),
        h('span', { class: 'hold-now-label small', style: { left: at(axis, axis.now) } }, `now ${when(axis.now)}`),
        h('span', { class: 'muted small' }, when(axis.to))),
      ...timeline.groups.map((g) => h('div', { class: 'hold-group', 'data-aggregate': g.aggregate_uuid ?? '' },
        h('h3', null, g.aggregate_uuid ? `aggregate ${g.aggregate_uuid}` : 'in no aggregate'),
        g.providers.map((p) => h('div', { class: 'hold-row', 'data-uuid': p.uuid },
          h('div', { class: 'hold-name', title: p.uuid }, p.name),
          h('div', { class: 'hold-track' }, nowLine(), p.holds.map((hold) => bar(axis, hold))))))),
    );
  }

  let loading = false;
  async function refresh() {
    if (loading) return;
    loading = true;
    try {
      render(await load());
    } catch (err) {
      console.warn('holds time line unavailable', err);
    } finally {
      loading = false;
    }
  }

  // The page's refresh ends by writing "updated ..." in the status line: the time line follows it.
  const status = $('status');
  if (status) new MutationObserver(() => { if (status.textContent.startsWith('updated')) refresh(); }).observe(status, { childList: true, characterData: true, subtree: true });
})();
