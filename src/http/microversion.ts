// Microversion negotiation shared by both APIs (Placement "placement",
// Cyborg "accelerator"). Parsing follows microversion_parse: the last header
// entry for our service type wins, values are int.int, `latest` is the max.
import { Microversion } from '../microversion.js';

export { Microversion };

/**
 * The value this request asked for, for `serviceType`; undefined when no
 * entry names it. Repeated headers arrive comma-joined.
 */
export function requestedVersion(header: string | undefined, serviceType: string): string | undefined {
  if (!header) return undefined;
  let found: string | undefined;
  for (const entry of header.split(',')) {
    const [service, ...rest] = entry.trim().split(/\s+/);
    if (service && service.toLowerCase() === serviceType) found = rest.join(' ');
  }
  return found;
}

export type NegotiationFailure = { ok: false; reason: 'syntax' | 'range'; value: string };
export type Negotiation = { ok: true; version: Microversion } | NegotiationFailure;

export function negotiate(asked: string | undefined, min: string, max: string): Negotiation {
  const lo = Microversion.parse(min)!;
  const hi = Microversion.parse(max)!;
  if (asked === undefined) return { ok: true, version: lo };
  if (asked.trim().toLowerCase() === 'latest') return { ok: true, version: hi };
  const v = Microversion.parse(asked);
  if (!v) return { ok: false, reason: 'syntax', value: asked };
  if (v.compare(lo) < 0 || v.compare(hi) > 0) return { ok: false, reason: 'range', value: asked };
  return { ok: true, version: v };
}
