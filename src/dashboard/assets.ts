// The dashboard's static files, bundled as strings (assets.generated.ts) so
// Node and the Worker serve the same bytes without a filesystem or a CDN.
import { DASHBOARD_ASSETS } from './assets.generated.js';

export interface DashboardAsset {
  contentType: string;
  /** Strong validator: a hash of the body, fixed when the module is generated. */
  etag: string;
  body: string;
}

export function dashboardAsset(file: string): DashboardAsset | undefined {
  return Object.hasOwn(DASHBOARD_ASSETS, file) ? DASHBOARD_ASSETS[file] : undefined;
}

/** The page, told which auth strategy the service runs so it knows whether to ask for a token. */
export function dashboardPage(authStrategy: 'noauth2' | 'token' | 'keystone'): DashboardAsset {
  const page = DASHBOARD_ASSETS['index.html']!;
  return {
    contentType: page.contentType,
    etag: page.etag.replace(/"$/, `-${authStrategy}"`),
    body: page.body.replace('__AUTH_STRATEGY__', authStrategy),
  };
}
