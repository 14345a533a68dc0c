/** The policy rule every diagnostics route requires: placement's `admin_api` (a policy file may override it). */
export const DIAGNOSTICS_RULE = 'admin_api';
