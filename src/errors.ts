// Errors the domain throws (repos, candidates, schemas, jobs). Each says what
// kind of problem it is, in the API's own words, with upstream's error code —
// and nothing about HTTP: each API maps a kind to its status and envelope in
// one place (the HTTP kit's onError, src/http/kit.ts).

/** Placement's frozen error codes (placement/errors.py); never renamed or reused. */
export const ErrorCode = {
  UNDEFINED: 'placement.undefined_code',
  INVENTORY_INUSE: 'placement.inventory.inuse',
  CONCURRENT_UPDATE: 'placement.concurrent_update',
  DUPLICATE_NAME: 'placement.duplicate_name',
  PROVIDER_INUSE: 'placement.resource_provider.inuse',
  PROVIDER_CANNOT_DELETE_PARENT: 'placement.resource_provider.cannot_delete_parent',
  PROVIDER_NOT_FOUND: 'placement.resource_provider.not_found',
  QUERY_DUPLICATE_KEY: 'placement.query.duplicate_key',
  QUERY_BAD_VALUE: 'placement.query.bad_value',
  QUERY_MISSING_VALUE: 'placement.query.missing_value',
} as const;
/** Placement's codes, or an extension's own ('ext.<extension>.<reason>': a claim guard's refusal, placement/writes/kernel.ts). */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode] | `ext.${string}` | `placement.ext.${string}`;

export type Problem = 'invalid' | 'forbidden' | 'not_found' | 'conflict' | 'too_large';

export class DomainError extends Error {
  constructor(
    readonly problem: Problem,
    message: string,
    readonly code: ErrorCode = ErrorCode.UNDEFINED,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const invalid = (message: string, code?: ErrorCode) => new DomainError('invalid', message, code);
export const forbidden = (message: string, code?: ErrorCode) => new DomainError('forbidden', message, code);
export const notFound = (message: string, code?: ErrorCode) => new DomainError('not_found', message, code);
export const conflict = (message: string, code?: ErrorCode) => new DomainError('conflict', message, code);
