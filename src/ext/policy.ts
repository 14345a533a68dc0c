/** The policy rule every /ext route requires: placement's `admin_api` (a policy file may override it). */
export const EXT_RULE = 'admin_api';
