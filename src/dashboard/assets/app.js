// placement-edge capacity dashboard: plain DOM, no framework, no network
// beyond this service. Provider trees, class totals, projects and counts come
// from /dashboard/api/summary (one database round trip, paged on the server);
// traits, resource classes, devices and dead letters from the public APIs.
// Loaded as a module script: strict mode, deferred.
import { $, AUTH, fmt, h, plural, TOKEN_KEY, token } from './dom.js';

(() => {
  const OVER_PERCENT = 80;
  const DEVICES_PER_PAGE = 20;
  /** Trait chips shown before "+N more". */
  const TRAITS_SHOWN = 6;
  /** Rows of the headroom, drain and lease tables. */
  const HEADROOM_TREES_SHOWN = 20;
  const TAINTS_SHOWN = 20;
  const LEASES_SHOWN = 10;

  const state = {
    page: 1,
    perPage: 25,
    projectPage: 1,
    devicePage: 1,
    filters: { name: '', trait: '', aggregate: '', resource_class: '', over: false },
    refreshSeconds: 15,
    timer: 0,
    loading: false,
    again: false,
    lookupsLoaded: false,
    painted: false,
    devices: [],
    /** provider uuid -> its taints (GET /ext/taints), marked on the trees. */
    taints: new Map(),
    /** provider uuid -> name, for the headroom's trees. */
    names: new Map(),
    /** device uuid -> the taints of the providers its deployables are. */
    deviceTaints: new Map(),
  };



  const pct = (used, capacity) => (capacity > 0 ? (100 * used) / capacity : used > 0 ? Infinity : 0);

  /** Percent used, rounded: "31%", "150%"; "–" with no capacity and no use. */
  function percentLabel(used, capacity) {
    const p = pct(used, capacity);
    if (!Number.isFinite(p)) return 'no capacity';
    return `${p < 10 && p > 0 ? p.toFixed(1) : Math.round(p)}%`;
  }

  /** The physical amount behind an overcommitted or reserved capacity: "16 × 2.0", "(65,536 − 512 reserved)". */
  function physical(r) {
    const base = r.reserved > 0 ? `(${fmt(r.total)} − ${fmt(r.reserved)} reserved)` : fmt(r.total);
    if (r.allocation_ratio !== 1) return `${base} × ${r.allocation_ratio.toFixed(1)}`;
    return r.reserved > 0 ? base : '';
  }

  /** A bar with its percent beside it. */
  function meter(used, capacity) {
    const over = used > capacity;
    const p = pct(used, capacity);
    return h('div', { class: 'meter' }, bar(used, capacity),
      h('span', { class: `pct${over ? ' over' : p > OVER_PERCENT ? ' warn' : ''}` }, percentLabel(used, capacity)));
  }

  /** A usage bar: blue, orange above 80 %, red and outlined over capacity. */
  function bar(used, capacity) {
    const p = pct(used, capacity);
    const level = used > capacity ? 'over' : p > OVER_PERCENT ? 'warn' : '';
    const width = Math.min(100, Number.isFinite(p) ? p : 100);
    return h('div', {
      class: `bar ${level}`, role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': capacity, 'aria-valuenow': used,
      title: `${fmt(used)} used of ${fmt(capacity)}${Number.isFinite(p) ? ` (${p.toFixed(1)} %)` : ''}`,
    }, h('div', { class: 'fill', style: { width: `${width}%` } }));
  }

  // --- authentication -------------------------------------------------------

  class AuthRequired extends Error {}

  function showLogin(message) {
    $('login').hidden = false;
    $('main').hidden = true;
    $('sign-out').hidden = true;
    $('login-error').textContent = message || '';
    $('status').textContent = 'signed out';
    $('login-token').focus();
  }

  function showMain() {
    $('login').hidden = true;
    $('main').hidden = false;
    $('sign-out').hidden = AUTH === 'noauth2';
  }

  async function api(path) {
    const tok = token();
    if (!tok) throw new AuthRequired();
    const service = path.startsWith('/accelerator/') ? 'accelerator' : 'placement';
    const res = await fetch(path, {
      headers: { accept: 'application/json', 'x-auth-token': tok, 'openstack-api-version': `${service} latest` },
      cache: 'no-store',
    });
    if (res.status === 401) throw new AuthRequired('That token was not accepted.');
    if (res.status === 403 && path.startsWith('/dashboard/')) throw new AuthRequired('That token is not an administrator\'s.');
    if (!res.ok) {
      let detail = `${res.status} ${res.statusText}`;
      try {
        const body = await res.json();
        detail = body.errors?.[0]?.detail || body.error_message || detail;
      } catch { /* not JSON */ }
      throw new Error(`${path.split('?')[0]}: ${detail}`);
    }
    return res.json();
  }

  // --- rendering ------------------------------------------------------------

  function renderClasses(classes, threshold) {
    const names = Object.keys(classes);
    $('classes-note').textContent = `whole cloud · capacity = (total − reserved) × allocation ratio`;
    $('classes').replaceChildren(...(names.length ? names.map((name) => {
      const c = classes[name];
      return h('div', { class: 'class-card', 'data-class': name },
        h('div', { class: 'name' }, h('span', null, name),
          c.over_capacity ? h('span', { class: 'badge over' }, `${c.over_capacity} over capacity`)
            : c.over_threshold ? h('span', { class: 'badge warn' }, `${c.over_threshold} > ${threshold}%`) : null),
        meter(c.used, c.capacity),
        h('div', { class: 'nums' }, `${fmt(c.used)} used / ${fmt(c.capacity)} · ${fmt(c.free)} free · ${plural(c.providers, 'provider')}`));
    }) : [h('div', { class: 'empty' }, 'No inventory yet.')]));
  }

  /** Providers over capacity, then above the threshold, most used first. */
  function renderAttention(attention, threshold) {
    const { items, total } = attention;
    $('attention-count').textContent = total
      ? `${plural(total, 'provider')} over capacity or above ${threshold}% used${total > items.length ? ` · the ${items.length} most used shown` : ''}`
      : '';
    $('attention').replaceChildren(items.length
      ? h('table', { class: 'list attention' },
        h('thead', null, h('tr', null, h('th', null, 'provider'), h('th', null, 'worst class'), h('th', null, 'used'),
          h('th', { class: 'num' }, 'used / capacity'), h('th', { class: 'num' }, 'physical'), h('th', null, ''))),
        h('tbody', null, items.map((a) => {
          const w = a.worst;
          return h('tr', { class: a.over_capacity ? 'over' : 'warn', 'data-uuid': a.uuid },
            h('td', null, h('button', { type: 'button', class: 'link', title: `show ${a.uuid}`, onclick: () => setFilter('name', a.uuid) },
              a.root_name ? h('span', { class: 'muted' }, `${a.root_name} › `) : null, a.name)),
            h('td', { class: 'class-name' }, w.resource_class),
            h('td', { class: 'bar-cell' }, meter(w.used, w.capacity)),
            h('td', { class: 'num' }, `${fmt(w.used)} / ${fmt(w.capacity)}`),
            h('td', { class: 'num muted' }, physical(w)),
            h('td', null, a.over_capacity ? h('span', { class: 'badge over' }, `${fmt(w.used - w.capacity)} over`) : h('span', { class: 'badge warn' }, `> ${threshold}%`)));
        })))
      : h('div', { class: 'empty ok' }, `Nothing over capacity or above ${threshold}% used.`));
  }

  function chip(label, title, kind, onclick) {
    return h('button', { type: 'button', class: `chip ${kind}`, title, onclick }, label);
  }

  const describeTaint = (t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}${t.reason ? ` (${t.reason})` : ''}, since ${t.created_at}`;

  /** A provider and its children; a tainted root takes its whole tree out of candidates, a tainted child only itself. */
  function renderProvider(rp, inTaintedTree = false) {
    state.names.set(rp.uuid, rp.name);
    const taints = state.taints.get(rp.uuid) || [];
    const excludesTree = inTaintedTree || (taints.length > 0 && !rp.parent_provider_uuid);
    const classes = Object.keys(rp.resources);
    const rows = classes.map((name) => {
      const r = rp.resources[name];
      const over = r.used > r.capacity;
      return h('tr', { class: over ? 'over' : '', 'data-class': name },
        h('td', null, name),
        h('td', { class: 'bar-cell' }, meter(r.used, r.capacity)),
        h('td', { class: 'num', title: `total ${fmt(r.total)}, reserved ${fmt(r.reserved)}, ratio ${fmt(r.allocation_ratio)}` },
          `${fmt(r.used)} / ${fmt(r.capacity)}`),
        h('td', { class: 'num' }, over ? `${fmt(r.used - r.capacity)} over` : `${fmt(r.free)} free`),
        h('td', { class: 'num muted physical', title: 'physical amount: (total − reserved) × allocation ratio' }, physical(r)));
    });
    // Shared counters (partitionable devices): one bar per counter, its load against its total.
    for (const [name, c] of Object.entries(rp.counters || {})) {
      rows.push(h('tr', { class: `counter${c.load > c.total ? ' over' : ''}`, 'data-counter': name },
        h('td', { title: 'shared counter' }, `⧉ ${name}`),
        h('td', { class: 'bar-cell' }, meter(c.load, c.total)),
        h('td', { class: 'num' }, `${fmt(c.load)} / ${fmt(c.total)}`),
        h('td', { class: 'num' }, c.load > c.total ? `${fmt(c.load - c.total)} over` : `${fmt(c.total - c.load)} free`),
        h('td', { class: 'num muted physical' }, '')));
    }
    const traitChips = rp.traits.map((t) => chip(t, 'trait: show providers with it', 'trait', () => setFilter('trait', t)));
    const folded = traitChips.length > TRAITS_SHOWN + 1 ? traitChips.splice(TRAITS_SHOWN) : [];
    const chips = [
      ...rp.aggregates.map((a) => chip(`aggregate ${a.slice(0, 8)}`, `aggregate ${a}: show its members`, 'agg', () => setFilter('aggregate', a))),
      ...traitChips,
    ];
    if (folded.length) {
      const more = h('span', { class: 'folded', hidden: true }, folded);
      const toggle = h('button', { type: 'button', class: 'chip more', title: folded.map((c) => c.textContent).join('\n') }, `+${folded.length} more`);
      toggle.addEventListener('click', () => {
        more.hidden = !more.hidden;
        toggle.textContent = more.hidden ? `+${folded.length} more` : 'fewer';
      });
      chips.push(more, toggle);
    }
    const taintTitle = taints.length
      ? `${taints.map(describeTaint).join('\n')}\n${rp.parent_provider_uuid ? 'This provider' : 'Its whole tree'} takes part in no allocation candidate unless a request tolerates the key (ext_tolerate).`
      : '';
    const rpClass = `rp${rp.matched ? '' : ' unmatched'}${taints.length ? ' tainted' : ''}${inTaintedTree ? ' in-tainted-tree' : ''}`;
    return h('div', { class: rpClass, 'data-uuid': rp.uuid },
      h('div', { class: 'rp-body' },
        h('div', { class: 'rp-info' },
          h('div', { class: 'rp-head' },
            h('span', { class: 'rp-name' }, rp.name),
            rp.over_capacity ? h('span', { class: 'badge over' }, 'over capacity') : null,
            taints.length ? h('span', { class: 'badge taint', title: taintTitle }, `tainted ${[...new Set(taints.map((t) => t.key))].join(', ')}`) : null,
            inTaintedTree ? h('span', { class: 'muted small', title: 'its root is tainted' }, 'root tainted') : null),
          h('div', { class: 'uuid' }, rp.uuid),
          chips.length ? h('div', { class: 'chips' }, chips) : null),
        rows.length ? h('table', { class: 'inv' }, h('tbody', null, rows)) : h('div', { class: 'muted small' }, 'no inventory')),
      rp.children.length ? h('div', { class: 'children' }, rp.children.map((child) => renderProvider(child, excludesTree))) : null);
  }

  function pager(page, perPage, total, onPage, unit) {
    const pages = Math.max(1, Math.ceil(total / perPage));
    if (total <= perPage && page === 1) return [];
    return [
      h('button', { type: 'button', disabled: page <= 1, onclick: () => onPage(page - 1) }, '‹ Prev'),
      h('span', null, `page ${page} of ${pages} (${fmt(total)} ${unit})`),
      h('button', { type: 'button', disabled: page >= pages, onclick: () => onPage(page + 1) }, 'Next ›'),
    ];
  }

  function renderProviders(p) {
    if (!p.trees.length && p.page > 1 && p.total_trees > 0) {
      // The list shrank under the page being shown: go to its new last page.
      state.page = Math.ceil(p.total_trees / p.per_page);
      state.again = true;
    }
    $('providers-count').textContent = `${fmt(p.total_trees)} trees · ${fmt(p.matching_providers)} of ${fmt(p.total_providers)} providers match`;
    const goto = (page) => { state.page = page; refresh(); };
    const controls = () => pager(p.page, p.per_page, p.total_trees, goto, 'trees');
    $('pager-top').replaceChildren(...controls());
    $('pager-bottom').replaceChildren(...controls());
    const frag = document.createDocumentFragment();
    for (const tree of p.trees) frag.append(h('div', { class: 'tree' }, renderProvider(tree)));
    if (!p.trees.length) frag.append(h('div', { class: 'empty' }, p.total_providers ? 'No provider matches these filters.' : 'No resource providers yet.'));
    $('trees').replaceChildren(frag);
  }

  function renderProjects(projects) {
    $('projects-count').textContent = `${fmt(projects.total)} projects with consumers`;
    const classes = [...new Set(projects.items.flatMap((p) => Object.keys(p.usages)))].sort();
    $('projects').replaceChildren(projects.items.length
      ? h('table', { class: 'list' },
        h('thead', null, h('tr', null, h('th', null, 'project'), h('th', { class: 'num' }, 'consumers'),
          classes.map((c) => h('th', { class: 'num' }, c)))),
        h('tbody', null, projects.items.map((p) => h('tr', null,
          p.project_name
            ? h('td', { 'data-project': p.project_id, title: p.project_id }, p.project_name, h('div', { class: 'uuid' }, p.project_id))
            : h('td', { class: 'uuid', 'data-project': p.project_id }, p.project_id),
          h('td', { class: 'num' }, fmt(p.consumers)),
          classes.map((c) => h('td', { class: 'num' }, p.usages[c] === undefined ? '–' : fmt(p.usages[c])))))))
      : h('div', { class: 'empty' }, 'No allocations yet.'));
    $('projects-pager').replaceChildren(...pager(projects.page, projects.per_page, projects.total,
      (page) => { state.projectPage = page; refresh(); }, 'projects'));
  }

  function counts(map, bad) {
    const keys = Object.keys(map).sort();
    if (!keys.length) return [h('span', { class: 'empty' }, 'none')];
    return keys.map((k) => h('span', { class: `count${bad.includes(k) && map[k] > 0 ? ' bad' : ''}`, 'data-state': k }, k, h('b', null, fmt(map[k]))));
  }

  function renderAccelerators(acc, deadLetters) {
    $('arqs').replaceChildren(...counts(acc.arqs_by_state, ['BindFailed']));
    const outbox = { pending: 0, dead: 0, ...acc.outbox_by_state };
    $('outbox').replaceChildren(...counts(outbox, ['dead']));
    $('dead-letters').replaceChildren(deadLetters.length
      ? h('table', { class: 'list' },
        h('thead', null, h('tr', null, h('th', null, 'dead letter'), h('th', { class: 'num' }, 'attempts'), h('th', null, 'last error'))),
        h('tbody', null, deadLetters.slice(0, 10).map((d) => h('tr', null,
          h('td', null, `#${d.id} ${d.topic}`), h('td', { class: 'num' }, d.attempts), h('td', { class: 'small' }, d.last_error || '')))))
      : '');
    renderDevices();
  }

  function renderDevices() {
    const all = state.devices;
    const pages = Math.max(1, Math.ceil(all.length / DEVICES_PER_PAGE));
    state.devicePage = Math.min(state.devicePage, pages);
    const shown = all.slice((state.devicePage - 1) * DEVICES_PER_PAGE, state.devicePage * DEVICES_PER_PAGE);
    $('devices').replaceChildren(
      all.length
        ? h('table', { class: 'list' },
          h('thead', null, h('tr', null, h('th', null, 'host'), h('th', null, 'type'), h('th', null, 'vendor / model'), h('th', null, 'status'))),
          h('tbody', null, shown.map((d) => {
            const taints = state.deviceTaints.get(d.uuid) || [];
            return h('tr', { 'data-device': d.uuid }, h('td', null, d.hostname), h('td', null, d.type),
              h('td', null, `${d.vendor} ${d.model}`), h('td', null, d.status || 'enabled',
                taints.length ? [' ', h('span', { class: 'badge taint', title: taints.map(describeTaint).join('\n') },
                  `tainted ${[...new Set(taints.map((t) => t.key))].join(', ')}`)] : null));
          })))
        : h('div', { class: 'empty' }, 'No accelerator devices reported.'),
      h('div', { class: 'pager' }, ...pager(state.devicePage, DEVICES_PER_PAGE, all.length,
        (page) => { state.devicePage = page; renderDevices(); }, 'devices')));
  }

  // --- extensions: taints (drain list), leases, headroom ---------------------
  // Each panel is on the page only where its extension is installed (the
  // page's HTML carries the installed extensions' panels): without it, its
  // source is not asked for and nothing is drawn.

  const shown = (panel) => $(panel) !== null;

  /** GET /ext/taints entries -> provider uuid -> taints. */
  function taintMap(drain) {
    const map = new Map();
    for (const entry of drain ? drain.taints : []) {
      if (!map.has(entry.resource_provider_uuid)) map.set(entry.resource_provider_uuid, []);
      map.get(entry.resource_provider_uuid).push(entry.taint);
    }
    return map;
  }

  /** The drain list: each taint with the consumers still allocated on the provider (a root: on its tree). */
  function renderTaints(drain) {
    const entries = drain ? drain.taints : [];
    const consumers = new Set(entries.flatMap((e) => e.consumers));
    $('taints-count').textContent = drain
      ? `${plural(state.taints.size, 'provider')} · ${plural(consumers.size, 'consumer')} still on them`
      : 'not available';
    $('taints').replaceChildren(entries.length
      ? h('table', { class: 'list taints' },
        h('thead', null, h('tr', null, h('th', null, 'provider'), h('th', null, 'taint'), h('th', null, 'reason'), h('th', { class: 'num' }, 'consumers'))),
        h('tbody', null, entries.slice(0, TAINTS_SHOWN).map((e) => h('tr', { 'data-uuid': e.resource_provider_uuid },
          h('td', null, h('button', { type: 'button', class: 'link', title: `show ${e.resource_provider_uuid}`, onclick: () => setFilter('name', e.resource_provider_uuid) },
            e.resource_provider_name)),
          h('td', { class: 'class-name', title: `since ${e.taint.created_at}` }, `${e.taint.key}${e.taint.value ? `=${e.taint.value}` : ''}:${e.taint.effect}`),
          h('td', { class: 'small' }, e.taint.reason),
          h('td', { class: 'num', title: e.consumers.join('\n') }, fmt(e.consumers.length))))))
      : h('div', { class: 'empty ok' }, drain ? 'No provider is tainted.' : 'The extensions API did not answer.'));
  }

  /** Leases held, soonest expiry first; an expired one waits for the next sweep to release its allocations. */
  function renderLeases(list, now) {
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
  }

  /** Projects at or over a limit (extension: project limits, GET /ext/limits); null when the limits are off. */
  function renderLimits(answer) {
    const projects = answer ? answer.projects : [];
    $('limits-count').textContent = answer
      ? `${plural(projects.length, 'project')} at or over a limit · from ${answer.source}${answer.read_at ? `, read ${new Date(answer.read_at).toLocaleTimeString()}` : ''}`
      : 'off';
    const rows = projects.flatMap((p) => Object.entries(p.limits).map(([rc, l]) => ({ project: p.project_id, rc, ...l })));
    $('limits').replaceChildren(rows.length
      ? h('table', { class: 'list limits' },
        h('thead', null, h('tr', null, h('th', null, 'project'), h('th', null, 'class'), h('th', { class: 'num' }, 'usage'), h('th', { class: 'num' }, 'limit'))),
        h('tbody', null, rows.slice(0, LEASES_SHOWN).map((r) => h('tr', { class: r.usage > r.limit ? 'expired' : '', 'data-project': r.project },
          h('td', { class: 'uuid' }, r.project),
          h('td', null, r.rc),
          h('td', { class: 'num' }, fmt(r.usage)),
          h('td', { class: 'num' }, fmt(r.limit))))))
      : h('div', { class: 'empty' }, answer ? 'No project is at a limit.' : 'Project limits are off (PLACEMENT_LIMITS).'));
  }

  /** Aggregates as gang domains: their hosts, how many are free (no allocation in the tree), the free ones by name. */
  function renderDomains(domains) {
    const { items, total } = domains;
    $('domains-count').textContent = total
      ? `${plural(total, 'aggregate')} with hosts${total > items.length ? ` · the ${items.length} with most free hosts shown` : ''}`
      : '';
    $('domains').replaceChildren(items.length
      ? h('table', { class: 'list domains' },
        h('thead', null, h('tr', null, h('th', null, 'aggregate'), h('th', { class: 'num' }, 'hosts'), h('th', { class: 'num' }, 'free'), h('th', null, 'free hosts'))),
        h('tbody', null, items.map((d) => h('tr', { 'data-aggregate': d.uuid },
          h('td', null, h('button', { type: 'button', class: 'link uuid', title: `show the trees in ${d.uuid}`, onclick: () => setFilter('aggregate', d.uuid) }, d.uuid)),
          h('td', { class: 'num' }, fmt(d.hosts)),
          h('td', { class: 'num' }, fmt(d.free_hosts)),
          h('td', { class: 'muted small' }, d.free_host_names.join(', ') + (d.free_hosts > d.free_host_names.length ? ', …' : ''))))))
      : h('div', { class: 'empty' }, 'No aggregate has a host: gangs have no domain (GET /ext/gang_candidates?ext_domain=any still works).'));
  }

  /** Names of the trees a headroom answer counts: from the page, else one GET each. */
  async function providerNames(uuids) {
    await Promise.all(uuids.filter((u) => !state.names.has(u)).map(async (u) => {
      const rp = await api(`/resource_providers/${u}`).catch(() => null);
      if (rp) state.names.set(u, rp.name);
    }));
    return (u) => state.names.get(u) || u;
  }

  async function runHeadroom() {
    const raw = $('headroom-query').value.trim();
    // A whole candidates URL, a query string with its "?", or the bare query string.
    const query = raw.includes('?') ? raw.slice(raw.indexOf('?') + 1) : raw;
    $('headroom-error').textContent = '';
    if (!query) { $('headroom').replaceChildren(); return; }
    $('headroom').replaceChildren(h('div', { class: 'muted' }, 'counting…'));
    try {
      const result = await api(`/ext/headroom?${query}`);
      const trees = [...result.trees].sort((a, b) => b.count - a.count || a.root_provider_uuid.localeCompare(b.root_provider_uuid));
      const shown = trees.slice(0, HEADROOM_TREES_SHOWN);
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
              h('td', null, h('button', { type: 'button', class: 'link', title: `show ${t.root_provider_uuid}`, onclick: () => setFilter('name', t.root_provider_uuid) },
                nameOf(t.root_provider_uuid))),
              h('td', { class: 'num' }, fmt(t.count))))))
          : null,
        trees.length > shown.length ? h('div', { class: 'muted small' }, `the ${shown.length} trees with the most room shown`) : null));
    } catch (err) {
      if (err instanceof AuthRequired) {
        sessionStorage.removeItem(TOKEN_KEY);
        showLogin(err.message);
        return;
      }
      $('headroom').replaceChildren();
      $('headroom-error').textContent = err.message;
    }
  }

  /** An extension resource: a service or token without it shows "not available", not an error. */
  async function optional(path) {
    try {
      return await api(path);
    } catch (err) {
      if (err instanceof AuthRequired) throw err;
      console.warn(`${path} unavailable`, err);
      return null;
    }
  }

  // --- data -----------------------------------------------------------------

  function summaryUrl() {
    const q = new URLSearchParams({ page: state.page, per_page: state.perPage, project_page: state.projectPage });
    for (const key of ['name', 'trait', 'aggregate', 'resource_class']) if (state.filters[key]) q.set(key, state.filters[key]);
    if (state.filters.over) q.set('over', String(OVER_PERCENT));
    return `/dashboard/api/summary?${q}`;
  }

  async function loadLookups() {
    // Options for the filters; the dashboard works without them.
    const [traits, classes] = await Promise.all([api('/traits?associated=true'), api('/resource_classes')]);
    $('trait-list').replaceChildren(...traits.traits.sort().map((t) => h('option', { value: t })));
    const select = $('f-class');
    select.replaceChildren(h('option', { value: '' }, 'any class'),
      ...classes.resource_classes.map((c) => c.name).sort().map((n) => h('option', { value: n }, n)));
    select.value = state.filters.resource_class;
    state.lookupsLoaded = true;
  }

  async function refresh() {
    clearTimeout(state.timer);
    if (state.loading) { state.again = true; return; }
    state.loading = true;
    $('status').textContent = 'refreshing…';
    try {
      const [summary, drain, leases, limits] = await Promise.all([
        api(summaryUrl()),
        shown('taints-panel') ? optional('/ext/taints') : null,
        shown('leases-panel') ? optional('/ext/leases') : null,
        shown('limits-panel') ? optional('/ext/limits') : null,
      ]);
      state.taints = taintMap(drain);
      showMain();
      renderAttention(summary.attention, summary.threshold_percent);
      renderClasses(summary.resource_classes, summary.threshold_percent);
      renderProviders(summary.providers);
      renderProjects(summary.projects);
      if (shown('taints-panel')) renderTaints(drain);
      if (shown('leases-panel')) renderLeases(leases, Date.parse(summary.generated_at));
      if (shown('limits-panel')) renderLimits(limits);
      if (shown('domains-panel')) renderDomains(summary.domains);
      if (!state.painted) {
        state.painted = true;
        // After the next frame: when the first page of trees is on screen (read by bench/dashboard.ts).
        requestAnimationFrame(() => setTimeout(() => performance.mark('dashboard:first-data'), 0));
      }
      const acc = summary.accelerators;
      const hasDevices = Object.keys(acc.devices_by_status).length > 0;
      const hasDead = (acc.outbox_by_state.dead || 0) > 0;
      const [devices, dead, deployables] = await Promise.all([
        hasDevices ? api('/accelerator/v2/devices') : { devices: [] },
        hasDead ? api('/accelerator/v2/outbox?state=dead') : { outbox: [] },
        // Which device sits on a tainted provider: its deployables name their resource provider.
        hasDevices && state.taints.size ? api('/accelerator/v2/deployables') : { deployables: [] },
      ]);
      state.deviceTaints = new Map();
      for (const d of deployables.deployables) {
        const taints = state.taints.get(d.rp_uuid);
        if (taints && d.device_uuid) state.deviceTaints.set(d.device_uuid, [...(state.deviceTaints.get(d.device_uuid) || []), ...taints]);
      }
      state.devices = devices.devices.sort((a, b) => a.hostname.localeCompare(b.hostname) || a.uuid.localeCompare(b.uuid));
      renderAccelerators(acc, dead.outbox);
      if (!state.lookupsLoaded) loadLookups().catch((err) => console.warn('filter options unavailable', err));
      $('status').textContent = `updated ${new Date(summary.generated_at).toLocaleTimeString()}`;
    } catch (err) {
      if (err instanceof AuthRequired) {
        sessionStorage.removeItem(TOKEN_KEY);
        showLogin(err.message);
        return;
      }
      $('status').textContent = `error: ${err.message}`;
    } finally {
      state.loading = false;
      if (state.again) { state.again = false; refresh(); } else schedule();
    }
  }

  function schedule() {
    clearTimeout(state.timer);
    // A hidden tab stops polling; coming back refreshes (visibilitychange).
    if (state.refreshSeconds > 0 && !$('main').hidden) {
      state.timer = setTimeout(() => { if (!document.hidden) refresh(); }, state.refreshSeconds * 1000);
    }
  }

  // --- controls -------------------------------------------------------------

  function setFilter(key, value) {
    state.filters[key] = value;
    const input = $(`f-${key === 'resource_class' ? 'class' : key}`);
    if (input.type === 'checkbox') input.checked = Boolean(value); else input.value = value;
    state.page = 1;
    refresh();
  }

  let debounce = 0;
  function readFilters() {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      state.filters = {
        name: $('f-name').value.trim(),
        trait: $('f-trait').value.trim(),
        aggregate: $('f-aggregate').value.trim(),
        resource_class: $('f-class').value,
        over: $('f-over').checked,
      };
      state.page = 1;
      refresh();
    }, 250);
  }

  $('filters').addEventListener('input', readFilters);
  $('filters').addEventListener('submit', (e) => { e.preventDefault(); readFilters(); });
  $('f-clear').addEventListener('click', () => {
    $('filters').reset();
    readFilters();
  });
  if (shown('headroom-panel')) $('headroom-form').addEventListener('submit', (e) => { e.preventDefault(); runHeadroom(); });
  $('refresh-now').addEventListener('click', () => refresh());
  $('refresh-interval').addEventListener('change', (e) => {
    state.refreshSeconds = Number(e.target.value);
    schedule();
  });
  document.addEventListener('visibilitychange', () => { if (!document.hidden) refresh(); });
  $('login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('login-token').value);
    $('login-token').value = '';
    refresh();
  });
  $('sign-out').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    clearTimeout(state.timer);
    showLogin('');
  });

  state.refreshSeconds = Number($('refresh-interval').value);
  if (token()) refresh(); else showLogin('');
})();
