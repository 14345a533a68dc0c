// The extensions this service ships (src/ext/README.md): one line each. The
// composition root installs them (src/compose.ts) and the configuration
// validates their settings with its own (src/config.ts); removing one is
// deleting its folder and its line here, with those of the extensions whose
// `requires` name it (an app without what one requires refuses to start).
import { counters } from './ext/counters/extension.js';
import { events } from './ext/events/extension.js';
import { firstOf } from './ext/first-of/extension.js';
import { gangs } from './ext/gangs/extension.js';
import { headroom } from './ext/headroom/extension.js';
import { holds } from './ext/holds/extension.js';
import { leases } from './ext/leases/extension.js';
import { limits } from './ext/limits/extension.js';
import { preemption } from './ext/preemption/extension.js';
import { simulate } from './ext/simulate/extension.js';
import { sites } from './ext/sites/extension.js';
import { taints } from './ext/taints/extension.js';
import type { Extension } from './extension.js';

/**
 * The extensions this service installs, in order: one line each (src/ext/README.md).
 * The order is the order of their routes under /ext and in GET /openapi.json,
 * of their parameters there, of their read hooks in a candidates read batch,
 * of their claim guards (an earlier refusal is answered first), of their sweeps
 * and of their entries in the audit's report.
 */
export const EXTENSIONS: readonly Extension[] = [
  headroom,
  leases,
  taints,
  counters,
  limits,
  gangs,
  firstOf,
  holds,
  preemption,
  events,
  simulate,
  sites,
];
