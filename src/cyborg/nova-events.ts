// Cyborg -> Nova: POST {nova}/os-server-external-events with the
// accelerator-request-bound events of one instance (microversion 2.82).
// Where Nova is and which token it is shown come from a NovaIdentity: NOVA_URL
// and NOVA_TOKEN as configured, or the service's Keystone identity (the
// `compute` endpoint of its catalog and its token: src/http/keystone/nova-identity.ts).
import type { NovaEventPayload } from '../jobs/messages.js';

export type DeliveryResult = { delivered: true; note?: string } | { delivered: false; error: string };

/** Where to send one delivery, and the token to send with it (none: Nova's noauth). */
export interface NovaAccess {
  url: string;
  token?: string;
}

export interface NovaIdentity {
  /**
   * Where Nova is and the token to show it now; undefined when no Nova is
   * configured at all (events are dropped, as Cyborg without [nova]). Throws
   * when it cannot say now (Keystone down, no `compute` endpoint in the
   * catalog): the delivery fails and is retried.
   */
  access(): Promise<NovaAccess | undefined>;
  /** Nova answered 401 to `refused`: a renewed access to try once more, or undefined when the token is static. */
  renewAfterRefusal(refused: NovaAccess): Promise<NovaAccess | undefined>;
}

/** NOVA_URL + NOVA_TOKEN as configured (noauth2 and token modes, or both set in keystone mode). */
export function staticNovaIdentity(url: string | undefined, token: string | undefined): NovaIdentity {
  const access = url === undefined ? undefined : { url, ...(token === undefined ? {} : { token }) };
  return {
    access: async () => access,
    renewAfterRefusal: async () => undefined,
  };
}

export interface NovaHttp {
  timeoutMs: number;
  fetch: typeof fetch;
}

interface NovaEventResult {
  code?: number;
}

type Posted = { status: number; text: string } | { error: string };

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));

async function post(http: NovaHttp, access: NovaAccess, body: string): Promise<Posted> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    'X-OpenStack-Nova-API-Version': '2.82',
    'OpenStack-API-Version': 'compute 2.82',
  };
  if (access.token) headers['X-Auth-Token'] = access.token;
  try {
    const res = await http.fetch(`${access.url.replace(/\/+$/, '')}/os-server-external-events`, {
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.timeout(http.timeoutMs),
    });
    return { status: res.status, text: await res.text().catch(() => '') };
  } catch (err) {
    return { error: `nova unreachable: ${reason(err)}` };
  }
}

export async function sendNovaEvents(nova: NovaIdentity, http: NovaHttp, payload: NovaEventPayload): Promise<DeliveryResult> {
  let access: NovaAccess | undefined;
  try {
    access = await nova.access();
  } catch (err) {
    return { delivered: false, error: `cannot reach nova: ${reason(err)}` };
  }
  if (!access) return { delivered: true, note: 'no Nova configured (NOVA_URL, Keystone identity); event dropped' };
  const body = JSON.stringify({
    events: payload.events.map((e) => ({
      name: 'accelerator-request-bound',
      server_uuid: payload.instanceUuid,
      tag: e.arqUuid,
      status: e.status,
    })),
  });
  let posted = await post(http, access, body);
  if ('status' in posted && posted.status === 401) {
    // The token expired early or was revoked: one fresh token, one more try (keystoneauth's reauthentication).
    let renewed: NovaAccess | undefined;
    try {
      renewed = await nova.renewAfterRefusal(access);
    } catch (err) {
      return { delivered: false, error: `nova refused the token (401) and a new one could not be had: ${reason(err)}` };
    }
    if (renewed) posted = await post(http, renewed, body);
  }
  if ('error' in posted) return { delivered: false, error: posted.error };
  if (posted.status === 200) return { delivered: true };
  if (posted.status === 207) {
    // Nova took the request; per-event codes (422: no host yet, 404: instance
    // gone) will not change on a retry, and Nova reads ARQ states itself.
    let codes: number[] = [];
    try {
      codes = ((JSON.parse(posted.text) as { events?: NovaEventResult[] }).events ?? []).map((e) => e.code ?? 0);
    } catch {
      /* keep empty */
    }
    return { delivered: true, note: `207 with codes ${codes.join(',')}` };
  }
  return { delivered: false, error: `nova answered ${posted.status}: ${posted.text.slice(0, 200)}` };
}
