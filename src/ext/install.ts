// The extensions this service installs into placement's engines, in one
// place: the composition root (src/compose.ts) builds each app's hooks from
// these lists. A new extension (limits enforced inside the claim, gang
// claims) is one more entry here, not one more path through the core.
import type { WriteExtension } from '../placement/writes/hooks.js';
import { countersWrites } from './counters/claim-guard.js';
import { holdsWrites } from './holds/claim-guard.js';

/** What the write kernel runs beside placement's own rules, in order (an earlier refusal is answered first). */
export const writeExtensions: readonly WriteExtension[] = [countersWrites, holdsWrites];
