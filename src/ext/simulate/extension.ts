// What if (docs/simulate.md): POST /ext/simulate and GET /ext/defrag, answered
// by the candidates engine over an in-memory copy of the cloud with changes
// applied (nothing written). Routes only: it reads through the engine the app
// installed (its parameters and read hooks), adds nothing to the engine itself.
import type { Extension } from '../../extension.js';
import { simulateRoutes } from './http/routes.js';

export const simulate: Extension = { name: 'simulate', routes: [simulateRoutes] };
