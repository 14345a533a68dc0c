// As much of Nova's compute API as the reaper needs: DELETE /servers/{id}
// (a server's uuid is its consumer in placement), with the agent's token.
import type { FetchLike } from '../report/client.js';
import type { ServiceConnection } from '../report/keystone-session.js';

/** Nova could not be asked, or answered 5xx: try again later. */
export class NovaUnavailable extends Error {
  override name = 'NovaUnavailable';
}

/** Nova refused the delete (403: the reaper's user may not; 409: locked): trying again will not help. */
export class NovaRefused extends Error {
  override name = 'NovaRefused';
  constructor(
    readonly status: number,
    detail: string,
  ) {
    super(`Nova answered ${status}: ${detail}`);
  }
}

export class NovaServers {
  private readonly base: string;

  constructor(
    private readonly connection: ServiceConnection,
    private readonly doFetch: FetchLike,
  ) {
    this.base = connection.endpoint.replace(/\/+$/, '');
  }

  /** Asks Nova to delete the server: `accepted` (it will, and then frees its allocations) or `gone` (no such server). */
  async delete(serverId: string): Promise<'accepted' | 'gone'> {
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'placement-agent reaper' };
    if (this.connection.token) {
      try {
        headers['x-auth-token'] = await this.connection.token();
      } catch (err) {
        throw new NovaUnavailable(`Keystone: ${(err as Error).message}`);
      }
    }
    let response: Response;
    try {
      response = await this.doFetch(new Request(`${this.base}/servers/${encodeURIComponent(serverId)}`, { method: 'DELETE', headers }));
    } catch (err) {
      throw new NovaUnavailable(`DELETE /servers/${serverId}: ${(err as Error).message}`);
    }
    const text = await response.text();
    if (response.status === 204 || response.status === 202) return 'accepted';
    if (response.status === 404) return 'gone';
    if (response.status >= 500) throw new NovaUnavailable(`DELETE /servers/${serverId} -> ${response.status}`);
    throw new NovaRefused(response.status, text.slice(0, 300));
  }
}
