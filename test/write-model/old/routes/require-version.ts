// The frozen routes' version gate, as a handler's first statement (the live
// routes state `since` in their route declarations and the route table
// enforces it, through the same kit call).
import type { AppContext } from '../../../../src/http/env.js';
import { placementHttp } from '../../../../src/placement/http/profile.js';
import { type Feature, MV } from '../../../../src/placement/versions.js';

/** Routes that do not exist below a microversion answer 404 (or 405), as version_handler does. */
export function requireVersion(c: AppContext, feature: Feature, status: 404 | 405 = 404): void {
  placementHttp.requireVersion(c, MV[feature], status);
}
