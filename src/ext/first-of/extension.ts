// Prioritized alternatives among granular groups (docs/extensions-gpu.md):
// one query parameter; the search of alternatives is the engine's own
// (placement/candidates/alternatives.ts), which headroom and why-no-host share.
import type { Extension } from '../../extension.js';
import { firstOfParam } from './params.js';

export const firstOf: Extension = { name: 'first-of', params: [firstOfParam] };
