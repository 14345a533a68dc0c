// Stable provider uuids (RFC 4122 v5 of the provider name) so a host keeps
// its identity across restarts without local state. Reporting prefers the
// uuid placement already has for that name.
import { createHash } from 'node:crypto';

const NAMESPACE = '6f1c0a3e-4b8e-5d2a-9c7f-1e0b3a5d7c90';

export function providerUuid(name: string): string {
  const ns = Buffer.from(NAMESPACE.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1').update(ns).update(name, 'utf8').digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
