// The dashboard's "what if" panel (docs/simulate.md): pick a change (an
// allocation ratio over an aggregate, the providers with a trait removed, a
// flavor resized, more hosts like one), run it with a query through POST
// /ext/simulate, and see the query's headroom and the dashboard's figures
// before and after, the consumers that would no longer fit where they are
// (and whether they could go elsewhere), and the inventories left over
// capacity. Nothing is written. A module of its own beside app.js: it shares
// only the page and the token the sign-in form keeps (sessionStorage).
import { $, fmt, h, plural, token } from './dom.js';

(() => {
  const DISPLACED_SHOWN = 20;


  const signed = (n) => (n > 0 ? `+${fmt(n)}` : n < 0 ? `−${fmt(-n)}` : '±0');

  async function api(method, path, body) {
    const signedIn = token();
    if (!signedIn) throw new Error('Sign in first.');
    const res = await fetch(path, {
      method,
      headers: {
        accept: 'application/json',
        'content-type': 'application/json',
        'x-auth-token': signedIn,
        'openstack-api-version': 'placement latest',
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
    const text = await res.text();
    const json = text ? JSON.parse(text) : null;
    if (!res.ok) throw new Error(json?.errors?.[0]?.detail || `${res.status} ${res.statusText}`);
    return json;
  }

  /** "VCPU:2,MEMORY_MB:2048" -> { VCPU: 2, MEMORY_MB: 2048 }. */
  function resources(text, what) {
    const out = {};
    for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
      const [name, amount] = part.split(':');
      if (!name || !/^[1-9][0-9]*$/.test(amount || '')) throw new Error(`${what}: write it as CLASS:N[,CLASS:N], not '${part}'`);
      out[name.trim()] = Number(amount);
    }
    if (!Object.keys(out).length) throw new Error(`${what}: name at least one CLASS:N`);
    return out;
  }

  const field = (id) => $(id).value.trim();

  /** The change the form describes, as POST /ext/simulate takes it (removing by trait: the trees of the providers that have it). */
  async function change() {
    const kind = $('what-if-kind').value;
    if (kind === 'ratio') {
      return {
        op: 'set_inventory',
        aggregate: field('what-if-aggregate'),
        resource_class: field('what-if-class'),
        allocation_ratio: Number(field('what-if-ratio')),
      };
    }
    if (kind === 'remove-trait') {
      const trait = field('what-if-trait');
      const found = await api('GET', `/resource_providers?required=${encodeURIComponent(trait)}`);
      if (!found.resource_providers.length) throw new Error(`No resource provider has the trait ${trait}.`);
      return { op: 'remove_trees', providers: found.resource_providers.map((p) => p.uuid) };
    }
    if (kind === 'resize') return { op: 'resize', from: resources(field('what-if-from'), 'from'), to: resources(field('what-if-to'), 'to') };
    return { op: 'add_copies', of: field('what-if-like'), count: Number(field('what-if-count')) };
  }

  function showFields() {
    const kind = $('what-if-kind').value;
    for (const group of document.querySelectorAll('#what-if-form [data-kind]')) group.hidden = group.dataset.kind !== kind;
  }

  function headroomRow(q) {
    const domains = (m) => (m.domains ? ` · ${m.domains.reduce((n, d) => n + d.gangs, 0)} gangs` : '');
    return h('tr', { 'data-query': q.name },
      h('td', { class: 'class-name' }, q.query),
      h('td', { class: 'num', 'data-before': q.before.total }, `${fmt(q.before.total)} in ${plural(q.before.trees, 'tree')}${domains(q.before)}`),
      h('td', { class: 'num', 'data-after': q.after.total }, `${fmt(q.after.total)} in ${plural(q.after.trees, 'tree')}${domains(q.after)}`),
      h('td', { class: 'num' }, signed(q.after.total - q.before.total)));
  }

  /** The dashboard's headline figures, before and after, one row per figure. */
  function figures(before, after) {
    const rows = [
      ['providers', before.total_providers, after.total_providers],
      ['trees', before.total_trees, after.total_trees],
      ['needing attention', before.attention_total, after.attention_total],
    ];
    for (const name of [...new Set([...Object.keys(before.resource_classes), ...Object.keys(after.resource_classes)])].sort()) {
      const b = before.resource_classes[name] || { capacity: 0, used: 0, free: 0, over_capacity: 0 };
      const a = after.resource_classes[name] || { capacity: 0, used: 0, free: 0, over_capacity: 0 };
      rows.push([`${name} capacity`, b.capacity, a.capacity], [`${name} used`, b.used, a.used], [`${name} free`, b.free, a.free],
        [`${name} providers over capacity`, b.over_capacity, a.over_capacity]);
    }
    return h('table', { class: 'list what-if-figures' },
      h('thead', null, h('tr', null, h('th', null, 'figure'), h('th', { class: 'num' }, 'before'), h('th', { class: 'num' }, 'after'), h('th', { class: 'num' }, 'change'))),
      h('tbody', null, rows.map(([label, b, a]) => h('tr', { 'data-figure': label, class: a === b ? '' : 'changed' },
        h('td', null, label), h('td', { class: 'num' }, fmt(b)), h('td', { class: 'num' }, fmt(a)), h('td', { class: 'num' }, signed(a - b))))));
  }

  const where = (allocations) => Object.entries(allocations).map(([rp, { resources: r }]) =>
    `${rp.slice(0, 8)} ${Object.entries(r).map(([c, n]) => `${c}:${n}`).join(',')}`).join('; ');

  function render(answer) {
    const moved = answer.displaced;
    return h('div', null,
      h('div', { class: 'headline', 'data-displaced': moved.length },
        moved.length ? [h('b', null, fmt(moved.length)), ` consumer${moved.length === 1 ? '' : 's'} would no longer fit where ${moved.length === 1 ? 'it is' : 'they are'}`]
          : 'Every consumer still fits where it is.',
        h('span', { class: 'muted small' }, ` · ${answer.changes.map((c) => `${c.op}: ${fmt(c.matched)} matched`).join(', ')} · nothing written`)),
      h('h3', null, 'Headroom'),
      h('table', { class: 'list what-if-headroom' },
        h('thead', null, h('tr', null, h('th', null, 'query'), h('th', { class: 'num' }, 'before'), h('th', { class: 'num' }, 'after'), h('th', { class: 'num' }, 'change'))),
        h('tbody', null, answer.queries.map(headroomRow))),
      moved.length ? [h('h3', null, 'No longer fit'),
        h('table', { class: 'list what-if-displaced' },
          h('thead', null, h('tr', null, h('th', null, 'consumer'), h('th', null, 'why'), h('th', null, 'now on'), h('th', null, 'could go'))),
          h('tbody', null, moved.slice(0, DISPLACED_SHOWN).map((d) => h('tr', { 'data-consumer': d.consumer_uuid },
            h('td', { class: 'uuid' }, d.consumer_uuid),
            h('td', null, d.reason === 'tree_removed' ? 'its tree removed' : 'over capacity'),
            h('td', { class: 'small' }, where(d.from)),
            h('td', { class: d.could_go ? 'small' : 'small error' }, d.could_go ? where(d.could_go) : 'nowhere: no candidate'))))),
        moved.length > DISPLACED_SHOWN ? h('div', { class: 'muted small' }, `the first ${DISPLACED_SHOWN} shown`) : null] : null,
      answer.over_capacity.after.length ? h('div', { class: 'error small what-if-over' },
        `${fmt(answer.over_capacity.after.length)} inventor${answer.over_capacity.after.length === 1 ? 'y' : 'ies'} over capacity after: `,
        answer.over_capacity.after.map((o) => `${o.resource_provider_uuid.slice(0, 8)} ${o.resource_class} ${fmt(o.used)}/${fmt(o.capacity)}`).join(', ')) : null,
      h('h3', null, "The dashboard's figures"),
      figures(answer.dashboard.before, answer.dashboard.after));
  }

  async function run() {
    $('what-if-error').textContent = '';
    const query = field('what-if-query');
    $('what-if').replaceChildren(h('div', { class: 'muted' }, 'simulating…'));
    try {
      const body = {
        changes: [await change()],
        queries: query ? [{ name: 'query', query: query.includes('?') ? query.slice(query.indexOf('?') + 1) : query }] : [],
      };
      $('what-if').replaceChildren(render(await api('POST', '/ext/simulate', body)));
    } catch (err) {
      $('what-if').replaceChildren();
      $('what-if-error').textContent = err.message;
    }
  }

  $('what-if-kind').addEventListener('change', showFields);
  $('what-if-form').addEventListener('submit', (e) => { e.preventDefault(); run(); });
  showFields();
})();
