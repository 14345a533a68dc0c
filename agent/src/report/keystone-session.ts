// The agent's Keystone sign-in (config keys auth_url, username, ...): the
// same password client and token renewal the service uses to validate
// tokens (src/http/keystone), and the endpoints from the catalog (placement;
// compute for the reaper).
import { endpointFromCatalog, KeystoneClient } from '../../../src/http/keystone/client.js';
import { ServiceTokenSource } from '../../../src/http/keystone/service-token.js';
import type { AgentConfig } from '../config.js';
import type { FetchLike } from './client.js';

export interface PlacementConnection {
  endpoint: string;
  /** The token to send now: static, or Keystone's, renewed before it expires. */
  token?: () => Promise<string>;
}

/** A service the agent talks to: its endpoint and the token to send it (the same sign-in for every service). */
export type ServiceConnection = PlacementConnection;

/** Where placement is and how to authenticate to it, or why the configuration cannot say; Keystone's own errors are thrown. */
export async function placementConnection(config: AgentConfig, fetchLike: FetchLike): Promise<PlacementConnection | string> {
  if (!config.auth_url && !config.endpoint)
    return 'no placement endpoint: use --endpoint URL, PLACEMENT_AGENT_ENDPOINT, or auth_url (Keystone catalog)';
  return serviceConnection(config, fetchLike, 'placement', config.endpoint);
}

/**
 * Where `serviceType` is (`endpoint`, or the Keystone catalog's on the configured
 * interface and region) and the token to send it; a string says why not.
 */
export async function serviceConnection(
  config: AgentConfig,
  fetchLike: FetchLike,
  serviceType: string,
  endpoint: string | undefined,
): Promise<ServiceConnection | string> {
  if (!config.auth_url) {
    if (!endpoint) return `no ${serviceType} endpoint: set it, or auth_url (Keystone catalog)`;
    const token = config.token;
    return { endpoint, token: token === undefined ? undefined : async () => token };
  }
  const client = new KeystoneClient(config.auth_url, async (input, init) => fetchLike(new Request(input, init)));
  const source = new ServiceTokenSource(client, {
    username: config.username!,
    password: config.password!,
    projectName: config.project_name!,
    userDomainName: config.user_domain_name,
    projectDomainName: config.project_domain_name,
  });
  let found = endpoint;
  if (!found) {
    const { catalog } = await source.token();
    found = endpointFromCatalog(catalog, serviceType, config.interface, config.region_name);
    if (!found) {
      const where = config.region_name ? ` in region ${config.region_name}` : '';
      return `the Keystone catalog has no ${config.interface} ${serviceType} endpoint${where}`;
    }
  }
  return { endpoint: found, token: async () => (await source.token()).token };
}
