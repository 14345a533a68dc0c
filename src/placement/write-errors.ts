// Why a Placement write was refused, as domain errors: the write model
// (repo/claims.ts) throws these and the route layer words them in each
// endpoint's HTTP error (routes/allocations.ts, routes/reshaper.ts).

/** A claim names a provider that does not exist (400). */
export class ProviderMissing extends Error {
  constructor(readonly uuid: string) {
    super(`Allocation for resource provider '${uuid}' that does not exist.`);
    this.name = 'ProviderMissing';
  }
}

/** The caller's consumer generation is not the stored one (409 concurrent_update). */
export class ConsumerGenerationMismatch extends Error {
  constructor(readonly expected: number | null, readonly got: number | null | undefined) {
    const show = (g: number | null | undefined) => (g === null || g === undefined ? 'null' : String(g));
    super(`consumer generation conflict - expected ${show(expected)} but got ${show(got)}`);
    this.name = 'ConsumerGenerationMismatch';
  }
}

/** The caller's provider generation is not the stored one (409 concurrent_update). */
export class ProviderGenerationMismatch extends Error {
  constructor(readonly uuid: string, readonly actual: number, readonly given: number) {
    super(`resource provider generation conflict for provider ${uuid}: actual: ${actual}, given: ${given}`);
    this.name = 'ProviderGenerationMismatch';
  }
}

/** A reshaper names an inventory provider that does not exist (400 resource_provider.not_found). */
export class InventoryProviderMissing extends Error {
  constructor(readonly uuid: string) {
    super(`Resource provider ${uuid} in inventories not found: No resource provider with uuid ${uuid} found`);
    this.name = 'InventoryProviderMissing';
  }
}

/** Inventory input refused before any usage is looked at (400), e.g. reserved > total. */
export class InvalidInventoryInput extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidInventoryInput';
  }
}

/** Inventory of classes that still have allocations would be removed (409 inventory.inuse). */
export class InventoryInUse extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'InventoryInUse';
  }
}

/** The provider named in the path does not exist (404). */
export class ProviderNotFound extends Error {
  constructor(readonly uuid: string) {
    super(`No resource provider with uuid ${uuid} found`);
    this.name = 'ProviderNotFound';
  }
}

/** A class to add is already in the provider's inventory (409 concurrent_update). */
export class InventoryExists extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InventoryExists';
  }
}

/** A class to delete is not in the provider's inventory (404). */
export class InventoryNotFound extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InventoryNotFound';
  }
}

/** The caller's provider generation is not the stored one; each endpoint words the 409 its own way. */
export class StaleProviderGeneration extends Error {
  constructor(readonly uuid: string) {
    super(`resource provider ${uuid} changed`);
    this.name = 'StaleProviderGeneration';
  }
}

/** Traits that do not exist (400 "No such trait(s): ..."). */
export class UnknownTraits extends Error {
  constructor(readonly names: string[]) {
    super(`No such trait(s): ${names.join(', ')}`);
    this.name = 'UnknownTraits';
  }
}

/** A provider with this uuid or name exists already (409 duplicate_name). */
export class DuplicateProvider extends Error {
  constructor(readonly field: 'name' | 'uuid', readonly value: string) {
    super(`Conflicting resource provider ${field}: ${value} already exists.`);
    this.name = 'DuplicateProvider';
  }
}

/** A provider cannot be created as asked (400 "Unable to create resource provider ..."). */
export class InvalidNewProvider extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'InvalidNewProvider';
  }
}
