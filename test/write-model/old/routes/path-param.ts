// The frozen routes' path-parameter reader (the live routes read typed
// parameters from their route declarations instead).
import type { AppContext } from '../../../../src/http/env.js';

export function pathParam(c: AppContext, name: string): string {
  return c.req.param(name) ?? '';
}
