// Why a Placement write was refused, as typed domain errors: the write model
// (writes/claims.ts and the other writes/ modules) throws these. Each carries
// its problem kind, upstream's error code and upstream's exact wording for
// the endpoint that asked (where upstream words one refusal differently per
// endpoint, the write is told which endpoint it serves), so placement's
// onError renders it as is and no route catches one.
import { DomainError, ErrorCode } from '../../errors.js';

/**
 * Which endpoint a claim serves: upstream words an unknown resource class
 * differently in each (POST /allocations, PUT /allocations/{consumer},
 * POST /reshaper).
 */
export type ClaimEndpoint = 'allocations' | 'consumer_allocations' | 'reshaper';

const UNKNOWN_CLASS_PREFIX: Record<ClaimEndpoint, (consumer: string) => string> = {
  allocations: () => 'Unable to allocate inventory ',
  consumer_allocations: (consumer) => `Unable to allocate inventory for consumer ${consumer}: `,
  reshaper: () => 'malformed reshaper data: ',
};

/** A claim or a reshaper inventory names a resource class that does not exist (400). */
export class UnknownResourceClass extends DomainError {
  constructor(
    readonly resourceClass: string,
    endpoint: ClaimEndpoint,
    consumer = '',
  ) {
    super('invalid', `${UNKNOWN_CLASS_PREFIX[endpoint](consumer)}No such resource class ${resourceClass}.`);
    this.name = 'UnknownResourceClass';
  }
}

/**
 * The consumers of a claim that allocate on any of `providerUuids`: those a
 * refusal about those providers concerns (a request claiming for several
 * consumers, as POST /ext/gangs, names them from the refusal).
 */
export function consumersOn(
  claims: readonly { uuid: string; allocations: Record<string, unknown> }[],
  providerUuids: readonly string[],
): string[] {
  return claims.filter((claim) => providerUuids.some((uuid) => uuid in claim.allocations)).map((claim) => claim.uuid);
}

/** A claim the inventory cannot take: no such inventory, unit constraints, or capacity (409). */
export class ClaimRefused extends DomainError {
  constructor(
    readonly reason: string,
    /** The consumers of the request the refusal concerns (consumersOn the providers it names). */
    readonly consumers: readonly string[] = [],
  ) {
    super('conflict', `Unable to allocate inventory: ${reason}`);
    this.name = 'ClaimRefused';
  }
}

/** A claim names a provider that does not exist (400). */
export class ProviderMissing extends DomainError {
  constructor(readonly uuid: string) {
    super('invalid', `Allocation for resource provider '${uuid}' that does not exist.`);
    this.name = 'ProviderMissing';
  }
}

/** The caller's consumer generation is not the stored one (409 concurrent_update). */
export class ConsumerGenerationMismatch extends DomainError {
  /** The consumer of the request whose generation it is. */
  readonly consumers: readonly string[];
  constructor(
    readonly expected: number | null,
    readonly got: number | null | undefined,
    consumer: string,
  ) {
    const show = (g: number | null | undefined) => (g === null || g === undefined ? 'null' : String(g));
    super('conflict', `consumer generation conflict - expected ${show(expected)} but got ${show(got)}`, ErrorCode.CONCURRENT_UPDATE);
    this.name = 'ConsumerGenerationMismatch';
    this.consumers = [consumer];
  }
}

/** The caller's provider generation is not the stored one (409 concurrent_update). */
export class ProviderGenerationMismatch extends DomainError {
  constructor(
    readonly uuid: string,
    readonly actual: number,
    readonly given: number,
  ) {
    super(
      'conflict',
      `resource provider generation conflict for provider ${uuid}: actual: ${actual}, given: ${given}`,
      ErrorCode.CONCURRENT_UPDATE,
    );
    this.name = 'ProviderGenerationMismatch';
  }
}

/** A reshaper names an inventory provider that does not exist (400 resource_provider.not_found). */
export class InventoryProviderMissing extends DomainError {
  constructor(readonly uuid: string) {
    super(
      'invalid',
      `Resource provider ${uuid} in inventories not found: No resource provider with uuid ${uuid} found`,
      ErrorCode.PROVIDER_NOT_FOUND,
    );
    this.name = 'InventoryProviderMissing';
  }
}

/** Inventory input refused before any usage is looked at (400), e.g. reserved > total. */
export class InvalidInventoryInput extends DomainError {
  constructor(message: string) {
    super('invalid', message);
    this.name = 'InvalidInventoryInput';
  }
}

/**
 * Inventory of classes that still have allocations would be removed (409
 * inventory.inuse); `prefix` is how the endpoint introduces it upstream.
 */
export class InventoryInUse extends DomainError {
  constructor(
    readonly reason: string,
    prefix?: string,
  ) {
    super('conflict', prefix ? `${prefix}: ${reason}` : reason, ErrorCode.INVENTORY_INUSE);
    this.name = 'InventoryInUse';
  }
}

/** The provider named in the path does not exist (404); a DELETE says so ("... found for delete"). */
export class ProviderNotFound extends DomainError {
  constructor(
    readonly uuid: string,
    forDelete = false,
  ) {
    super('not_found', `No resource provider with uuid ${uuid} found${forDelete ? ' for delete' : ''}`);
    this.name = 'ProviderNotFound';
  }
}

/** A class to add is already in the provider's inventory (409 concurrent_update). */
export class InventoryExists extends DomainError {
  constructor(message: string) {
    super('conflict', message, ErrorCode.CONCURRENT_UPDATE);
    this.name = 'InventoryExists';
  }
}

/** A class to delete is not in the provider's inventory (404). */
export class InventoryNotFound extends DomainError {
  constructor(message: string) {
    super('not_found', message);
    this.name = 'InventoryNotFound';
  }
}

/** The caller's provider generation is not the stored one (409 concurrent_update), worded as traits and aggregates upstream. */
export class StaleProviderGeneration extends DomainError {
  constructor(
    readonly uuid: string,
    message = "Resource provider's generation already changed. Please update the generation and try again.",
  ) {
    super('conflict', message, ErrorCode.CONCURRENT_UPDATE);
    this.name = 'StaleProviderGeneration';
  }
}

/** Traits that do not exist (400 "No such trait(s): ..."). */
export class UnknownTraits extends DomainError {
  constructor(readonly names: string[]) {
    super('invalid', `No such trait(s): ${names.join(', ')}`);
    this.name = 'UnknownTraits';
  }
}

/** A provider with this uuid or name exists already (409 duplicate_name). */
export class DuplicateProvider extends DomainError {
  constructor(
    readonly field: 'name' | 'uuid',
    readonly value: string,
  ) {
    super('conflict', `Conflicting resource provider ${field}: ${value} already exists.`, ErrorCode.DUPLICATE_NAME);
    this.name = 'DuplicateProvider';
  }
}

/** A provider cannot be created as asked (400 "Unable to create resource provider ..."). */
export class InvalidNewProvider extends DomainError {
  constructor(
    readonly providerName: string,
    readonly uuid: string,
    readonly reason: string,
  ) {
    super('invalid', `Unable to create resource provider "${providerName}", ${uuid}: ${reason}`);
    this.name = 'InvalidNewProvider';
  }
}

/** A provider update that upstream refuses (400), e.g. a loop in the tree or re-parenting before 1.37. */
export class InvalidProviderUpdate extends DomainError {
  constructor(readonly reason: string) {
    super('invalid', reason);
    this.name = 'InvalidProviderUpdate';
  }
}

/** A provider to delete still has children (409 resource_provider.cannot_delete_parent). */
export class ProviderHasChildren extends DomainError {
  constructor(readonly uuid: string) {
    super(
      'conflict',
      `Unable to delete parent resource provider ${uuid}: It has child resource providers.`,
      ErrorCode.PROVIDER_CANNOT_DELETE_PARENT,
    );
    this.name = 'ProviderHasChildren';
  }
}

/** A provider to delete still has allocations (409 resource_provider.inuse). */
export class ProviderInUse extends DomainError {
  constructor(readonly uuid: string) {
    super('conflict', `Unable to delete resource provider ${uuid}: Resource provider has allocations.`, ErrorCode.PROVIDER_INUSE);
    this.name = 'ProviderInUse';
  }
}
