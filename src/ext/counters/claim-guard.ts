// Shared counters on the write side: the write kernel's claim guard derived
// from the declaration (declaration.ts; placement/constraints.ts derives the
// ordinary path's decision and the one-batch claim's SQL from it).
import { constraintGuard } from '../../placement/constraints.js';
import type { WriteExtension } from '../../placement/writes/hooks.js';
import { COUNTERS } from './declaration.js';

export const countersClaimGuard = constraintGuard(COUNTERS);

export const countersWrites: WriteExtension = { claimGuards: [countersClaimGuard] };
