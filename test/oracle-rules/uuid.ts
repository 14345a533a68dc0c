// Frozen copy of src/shared/uuid.ts for the differential oracles (test/oracle-rules/README.md).
// UUIDs as both APIs read them, in one place. Request bodies name providers
// and consumers in the canonical form (jsonschema patterns); query values and
// path segments may be any form oslo's uuidutils.is_uuid_like accepts, and
// are compared in the canonical lower-case form.

/** The canonical form, either case: 8-4-4-4-12 hex digits. */
export const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * uuidutils.is_uuid_like plus str(uuid.UUID(value)): "urn:" and "uuid:"
 * dropped, braces stripped from the ends, dashes ignored, 32 hex digits.
 * The canonical lower-case dashed form, or null when `value` is not uuid-like.
 */
export function parseUuidLike(value: string): string | null {
  const hex = value
    .replaceAll('urn:', '')
    .replaceAll('uuid:', '')
    .replace(/^[{}]+|[{}]+$/g, '')
    .replaceAll('-', '')
    .toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) return null;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const isUuidLike = (value: string): boolean => parseUuidLike(value) !== null;

/** The canonical form of a value already checked with isUuidLike. */
export function normalizeUuid(value: string): string {
  const uuid = parseUuidLike(value);
  if (uuid === null) throw new TypeError(`not uuid-like: ${value}`);
  return uuid;
}
