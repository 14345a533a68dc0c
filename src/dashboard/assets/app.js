// placement-edge capacity dashboard: plain DOM, no framework, no network
// beyond this service. Provider trees, class totals, projects and counts come
// from /dashboard/api/summary (one database round trip, paged on the server);
// traits, resource classes, devices and dead letters from the public APIs.
// What the installed extensions add (their panels, marks on the trees) comes
// from their own scripts, registered in dom.js `parts` before this one runs.
// Loaded as a module script: strict mode, deferred.
import { $, AUTH, fmt, h, page, parts, plural, TOKEN_KEY, token } from './dom.js';

(() => {
  const OVER_PERCENT = 80;
  const DEVICES_PER_PAGE = 20;
  /** Trait chips shown before "+N more". */
  const TRAITS_SHOWN = 6;

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
    /** provider uuid -> name, for the extensions' lists of trees. */
    names: new Map(),
    /** The extensions' marks on devices: each (device) -> badges. */
    deviceBadges: [],
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

  /** A provider and its children, with the extensions' marks (`fromParent`: what each part handed down from the parent). */
  function renderProvider(rp, fromParent = []) {
    state.names.set(rp.uuid, rp.name);
    const marks = active.map((part, i) => (part.provider ? part.provider(rp, fromParent[i]) : null));
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
    // The extensions' rows under the inventory.
    for (const part of active) if (part.rows) rows.push(...part.rows(rp));
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
    const rpClass = ['rp', rp.matched ? null : 'unmatched', ...marks.flatMap((m) => (m ? m.classes : []))].filter(Boolean).join(' ');
    return h('div', { class: rpClass, 'data-uuid': rp.uuid },
      h('div', { class: 'rp-body' },
        h('div', { class: 'rp-info' },
          h('div', { class: 'rp-head' },
            h('span', { class: 'rp-name' }, rp.name),
            rp.over_capacity ? h('span', { class: 'badge over' }, 'over capacity') : null,
            marks.map((m) => (m ? m.badges : null))),
          h('div', { class: 'uuid' }, rp.uuid),
          chips.length ? h('div', { class: 'chips' }, chips) : null),
        rows.length ? h('table', { class: 'inv' }, h('tbody', null, rows)) : h('div', { class: 'muted small' }, 'no inventory')),
      rp.children.length ? h('div', { class: 'children' }, rp.children.map((child) => renderProvider(child, marks.map((m) => m?.down)))) : null);
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
            const badges = state.deviceBadges.flatMap((badgesOf) => badgesOf(d));
            return h('tr', { 'data-device': d.uuid }, h('td', null, d.hostname), h('td', null, d.type),
              h('td', null, `${d.vendor} ${d.model}`), h('td', null, d.status || 'enabled', badges.flatMap((b) => [' ', b])));
          })))
        : h('div', { class: 'empty' }, 'No accelerator devices reported.'),
      h('div', { class: 'pager' }, ...pager(state.devicePage, DEVICES_PER_PAGE, all.length,
        (page) => { state.devicePage = page; renderDevices(); }, 'devices')));
  }

  // --- extensions --------------------------------------------------------------
  // The parts registered by the installed extensions' scripts (dom.js), each
  // run only where its panel is on the page (the page's HTML carries the
  // panels of the extensions the app installs and leaves on): without it, its
  // source is not asked for and nothing is drawn.

  const shown = (panel) => $(panel) !== null;
  const active = parts.filter((part) => !part.panel || shown(part.panel));

  /** An auth error ends the session (the sign-in form again): true where `err` was one. */
  function signedOut(err) {
    if (!(err instanceof AuthRequired)) return false;
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin(err.message);
    return true;
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
      const [summary, ...answers] = await Promise.all([api(summaryUrl()), ...active.map((part) => (part.source ? optional(part.source) : null))]);
      active.forEach((part, i) => part.read?.(answers[i]));
      showMain();
      renderAttention(summary.attention, summary.threshold_percent);
      renderClasses(summary.resource_classes, summary.threshold_percent);
      renderProviders(summary.providers);
      renderProjects(summary.projects);
      active.forEach((part, i) => part.fill?.(answers[i], summary));
      if (!state.painted) {
        state.painted = true;
        // After the next frame: when the first page of trees is on screen (read by bench/dashboard.ts).
        requestAnimationFrame(() => setTimeout(() => performance.mark('dashboard:first-data'), 0));
      }
      const acc = summary.accelerators;
      const hasDevices = Object.keys(acc.devices_by_status).length > 0;
      const hasDead = (acc.outbox_by_state.dead || 0) > 0;
      const [devices, dead, deviceBadges] = await Promise.all([
        hasDevices ? api('/accelerator/v2/devices') : { devices: [] },
        hasDead ? api('/accelerator/v2/outbox?state=dead') : { outbox: [] },
        // The extensions' marks on devices.
        hasDevices ? Promise.all(active.map((part) => (part.devices ? part.devices() : null))) : [],
      ]);
      state.deviceBadges = deviceBadges.filter(Boolean);
      state.devices = devices.devices.sort((a, b) => a.hostname.localeCompare(b.hostname) || a.uuid.localeCompare(b.uuid));
      renderAccelerators(acc, dead.outbox);
      if (!state.lookupsLoaded) loadLookups().catch((err) => console.warn('filter options unavailable', err));
      $('status').textContent = `updated ${new Date(summary.generated_at).toLocaleTimeString()}`;
    } catch (err) {
      if (signedOut(err)) return;
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
  // What the extensions' parts borrow from the page, then their start.
  Object.assign(page, { api, optional, setFilter, meter, names: state.names, signedOut });
  for (const part of active) part.start?.();
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
