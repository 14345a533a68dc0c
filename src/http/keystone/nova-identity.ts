// The service towards Nova in a Keystone cloud, as Cyborg's [nova] section
// (keystoneauth password plugin + adapter): a token of its own Keystone user
// (or of a separate PLACEMENT_NOVA_* user), renewed before it expires and once
// more when Nova refuses it, and Nova's `compute` endpoint from that token's
// catalog (valid_interfaces tried in order, region_name). NOVA_URL and
// NOVA_TOKEN, when set, win over the catalog and the token. It satisfies
// src/cyborg/nova-events.ts's NovaIdentity (structurally: the HTTP kit does
// not import the accelerator API).
import { type CatalogEntry, endpointFromCatalog, KeystoneClient, type PasswordCredentials } from './client.js';
import { ServiceTokenSource } from './service-token.js';

export interface NovaKeystoneSettings {
  /** Keystone's v3 URL. */
  authUrl: string;
  credentials: PasswordCredentials;
  /** One Keystone request's time limit. */
  timeoutMs: number;
  /** Catalog interfaces, tried in order. */
  interfaces: readonly string[];
  /** The catalog region; any when undefined. */
  region?: string;
  /** NOVA_URL: where Nova is, whatever the catalog says. */
  url?: string;
  /** NOVA_TOKEN: a static token instead of Keystone's. */
  token?: string;
}

export interface NovaKeystoneAccess {
  url: string;
  token?: string;
}

export class KeystoneNovaIdentity {
  private readonly source: ServiceTokenSource;

  constructor(
    private readonly settings: NovaKeystoneSettings,
    fetcher: typeof fetch = (input, init) => fetch(input, init),
    now: () => number = () => Date.now(),
  ) {
    this.source = new ServiceTokenSource(new KeystoneClient(settings.authUrl, fetcher, settings.timeoutMs), settings.credentials, now);
  }

  async access(): Promise<NovaKeystoneAccess> {
    const { url, token } = this.settings;
    if (url !== undefined && token !== undefined) return { url, token };
    const issued = await this.source.token();
    return { url: url ?? this.endpoint(issued.catalog), token: token ?? issued.token };
  }

  async renewAfterRefusal(refused: NovaKeystoneAccess): Promise<NovaKeystoneAccess | undefined> {
    // A static NOVA_TOKEN cannot be renewed; nor can anything but the token we sent.
    if (this.settings.token !== undefined || refused.token === undefined) return undefined;
    const issued = await this.source.renewAfterRefusal(refused.token);
    return { url: this.settings.url ?? this.endpoint(issued.catalog), token: issued.token };
  }

  private endpoint(catalog: CatalogEntry[]): string {
    const { interfaces, region } = this.settings;
    for (const iface of interfaces) {
      const found = endpointFromCatalog(catalog, 'compute', iface, region);
      if (found) return found;
    }
    const where = region === undefined ? '' : ` in region ${region}`;
    throw new Error(
      `the Keystone catalog of user ${this.settings.credentials.username} has no ${interfaces.join(' or ')} compute endpoint${where} ` +
        '(register Nova with `openstack endpoint create ... compute`, or set NOVA_URL)',
    );
  }
}
