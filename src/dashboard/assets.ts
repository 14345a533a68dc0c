// The dashboard's static files, bundled as strings (assets.generated.ts) so
// Node and the Worker serve the same bytes without a filesystem or a CDN.
import type { DashboardAsset, DashboardPanel } from '../diagnostics/dashboard-repo.js';
import { DASHBOARD_ASSETS } from './assets.generated.js';

export type { DashboardAsset } from '../diagnostics/dashboard-repo.js';

/** The page's own files and the extensions' (their assets, by file name), at /dashboard/assets/<file>. */
export type PageAssets = Readonly<Record<string, DashboardAsset>>;

export function dashboardAsset(file: string, extensions: readonly PageAssets[] = []): DashboardAsset | undefined {
  for (const assets of [DASHBOARD_ASSETS, ...extensions]) if (Object.hasOwn(assets, file)) return assets[file];
  return undefined;
}

type AuthStrategy = 'noauth2' | 'token' | 'keystone';

/** Where the sign-in form tells an operator to get a token, per auth strategy (HTML). */
export const LOGIN_HINTS: Record<AuthStrategy, string> = {
  keystone:
    'This service takes Keystone tokens. Get one as an administrator with the OpenStack CLI, <code>openstack token issue -f value -c id</code> (your usual <code>OS_*</code> variables or <code>clouds.yaml</code>, scoped to a project where you have the admin role), and paste it here; it lasts as long as Keystone lets tokens live (an hour by default).',
  token: 'This service takes the tokens of <code>PLACEMENT_AUTH_TOKENS</code>: paste one whose roles include <code>admin</code>.',
  noauth2: 'This service runs without authentication (noauth2).',
};

/** The extensions' assets and the sections of `panels`, at the page's placeholders (`<!--panels:slot-->`, `<!--panel-assets-->`). */
function withPanels(body: string, panels: readonly DashboardPanel[], extensions: readonly PageAssets[]): string {
  const assets = extensions.flatMap((files) => {
    const named = Object.entries(files);
    return [
      ...named
        .filter(([, a]) => a.contentType.startsWith('text/css'))
        .map(([file]) => `<link rel="stylesheet" href="/dashboard/assets/${file}">\n`),
      ...named
        .filter(([, a]) => a.contentType.startsWith('text/javascript'))
        .map(([file]) => `<script type="module" src="/dashboard/assets/${file}"></script>\n`),
    ];
  });
  const slot = (name: DashboardPanel['slot']) =>
    panels
      .filter((p) => p.slot === name)
      .map((p) => p.html)
      .join('\n');
  return body
    .replace('<!--panel-assets-->\n', () => assets.join(''))
    .replace('<!--panels:top-->', () => slot('top'))
    .replace('<!--panels:timeline-->', () => slot('timeline'))
    .replace('<!--panels:columns-->', () => slot('columns'));
}

/** A short, stable name of the page's panels and assets, for its validator. */
function panelsTag(panels: readonly DashboardPanel[], extensions: readonly PageAssets[]): string {
  let hash = 0;
  const assets = extensions.flatMap((files) => Object.entries(files).map(([file, a]) => `${file}${a.etag}`));
  for (const char of [...panels.map((p) => p.html), ...assets].join('\0')) hash = (Math.imul(hash, 31) + char.charCodeAt(0)) | 0;
  return (hash >>> 0).toString(36);
}

/**
 * The page, told which auth strategy the service runs so it knows whether to
 * ask for a token, and how to get one, with the installed extensions' panels
 * and the assets that fill them.
 */
export function dashboardPage(
  authStrategy: AuthStrategy,
  panels: readonly DashboardPanel[] = [],
  extensions: readonly PageAssets[] = [],
): DashboardAsset {
  const page = DASHBOARD_ASSETS['index.html']!;
  return {
    contentType: page.contentType,
    etag: page.etag.replace(/"$/, `-${authStrategy}-${panelsTag(panels, extensions)}"`),
    body: withPanels(page.body, panels, extensions)
      .replace('__AUTH_STRATEGY__', authStrategy)
      .replace('__AUTH_HINT__', LOGIN_HINTS[authStrategy]),
  };
}
