// What the dashboard's scripts (app.js and each panel's) share: building DOM
// elements, formatting figures, and the sign-in token the page keeps.
export const TOKEN_KEY = 'placement-edge.dashboard.token';
export const AUTH = document.querySelector('meta[name="placement-auth"]').content;

export const $ = (id) => document.getElementById(id);

/** The token requests carry: the one signed in with, or the no-auth admin's. */
export const token = () => sessionStorage.getItem(TOKEN_KEY) || (AUTH === 'noauth2' ? 'admin' : null);

/** A DOM element: h('td', { class: 'num' }, 'text', child). Styles go through CSSOM (CSP allows no inline style). */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [key, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') el.className = value;
      else if (key === 'style') Object.assign(el.style, value);
      else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export const fmt = (n) => (Number.isInteger(n) ? n.toLocaleString('en-US') : n.toLocaleString('en-US', { maximumFractionDigits: 2 }));
export const plural = (n, word) => `${fmt(n)} ${word}${n === 1 ? '' : 's'}`;

/**
 * What the installed extensions add to the page: each extension's script (in
 * its own folder, src/ext/<name>/dashboard-assets/, loaded before app.js and
 * only where the extension is on) registers its part with `extend`; app.js
 * calls every part on each refresh, so an app without an extension carries
 * none of its code. A part may have:
 *   panel          the id of its panel: the part runs only where the panel is on the page
 *   source         what it reads (a GET, with the page's token) beside the summary; null where it does not answer
 *   read(answer)   first, with its answer, each refresh
 *   provider(rp, fromParent) -> { classes, badges, down }   marks on a provider of the trees ('down' is handed to its children)
 *   rows(rp)       rows of its own under a provider's inventory
 *   devices()      after the trees: a promise of (device) -> badges, or null
 *   fill(answer, summary)   draws its panel
 *   start()        once, when the page starts
 * `page` is what app.js lends them: api, optional, setFilter, meter, names, signedOut.
 */
export const parts = [];
export const extend = (part) => parts.push(part);
export const page = {};
