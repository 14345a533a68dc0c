// Cyborg -> Nova: POST {NOVA_URL}/os-server-external-events with the
// accelerator-request-bound events of one instance (microversion 2.82).
import type { NovaEventPayload } from '../jobs/messages.js';

export type DeliveryResult = { delivered: true; note?: string } | { delivered: false; error: string };

export interface NovaTarget {
  url: string | undefined;
  token: string | undefined;
  timeoutMs: number;
  fetch: typeof fetch;
}

interface NovaEventResult {
  code?: number;
}

export async function sendNovaEvents(target: NovaTarget, payload: NovaEventPayload): Promise<DeliveryResult> {
  if (!target.url) return { delivered: true, note: 'NOVA_URL not configured; event dropped' };
  const body = {
    events: payload.events.map((e) => ({
      name: 'accelerator-request-bound',
      server_uuid: payload.instanceUuid,
      tag: e.arqUuid,
      status: e.status,
    })),
  };
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    'X-OpenStack-Nova-API-Version': '2.82',
    'OpenStack-API-Version': 'compute 2.82',
  };
  if (target.token) headers['X-Auth-Token'] = target.token;
  let res: Response;
  try {
    res = await target.fetch(`${target.url.replace(/\/+$/, '')}/os-server-external-events`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(target.timeoutMs),
    });
  } catch (err) {
    return { delivered: false, error: `nova unreachable: ${err instanceof Error ? err.message : String(err)}` };
  }
  const text = await res.text().catch(() => '');
  if (res.status === 200) return { delivered: true };
  if (res.status === 207) {
    // Nova took the request; per-event codes (422: no host yet, 404: instance
    // gone) will not change on a retry, and Nova reads ARQ states itself.
    let codes: number[] = [];
    try {
      codes = ((JSON.parse(text) as { events?: NovaEventResult[] }).events ?? []).map((e) => e.code ?? 0);
    } catch {
      /* keep empty */
    }
    return { delivered: true, note: `207 with codes ${codes.join(',')}` };
  }
  return { delivered: false, error: `nova answered ${res.status}: ${text.slice(0, 200)}` };
}
