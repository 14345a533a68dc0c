// Shared counters on the write side: the write kernel's claim guard derived
// from the declaration (declaration.ts; placement/capacity.ts derives the
// ordinary path's decision and the one-batch claim's SQL from it).
import { constraintGuard } from '../../placement/capacity.js';
import type { WriteExtension } from '../../placement/writes/kernel.js';
import { COUNTERS } from './declaration.js';

export const countersClaimGuard = constraintGuard(COUNTERS);

export const countersWrites: WriteExtension = { claimGuards: [countersClaimGuard] };
