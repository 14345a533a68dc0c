// Holds as one app installs them (docs/holds.md): the declaration its rule is
// enforced by and the read hook built for that app alone, so what the hook
// keeps between requests (the state of the holds epochs it read) is the app's,
// never another app's of the same process. The extensions that use holds
// (sites' capacity slices, simulate's replay) take the declaration from here,
// so a test that installs holds with another declaration sees them follow.
import { requiredState, type StateKey, stateKey } from '../../extension.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import { type HeldCapacityHook, heldCapacityHook } from './candidates.js';

export interface InstalledHolds {
  readonly declaration: SetAsideConstraint;
  readonly hook: HeldCapacityHook;
}

/** What holds keep per app (Deps.extensions.state(HOLDS), ExtensionContext.state(HOLDS) in a later extension's setUp). */
export const HOLDS = stateKey<InstalledHolds>('holds');

/** Holds for one app, enforcing `declaration`. */
export const installHolds = (declaration: SetAsideConstraint): InstalledHolds => ({ declaration, hook: heldCapacityHook(declaration) });

/** The app's holds, for an extension that requires them (the app refuses to start without them): from its setUp's context or its Deps. */
export const appHolds = (extensions: { state<T>(key: StateKey<T>): T | undefined }): InstalledHolds => requiredState(extensions, HOLDS);
