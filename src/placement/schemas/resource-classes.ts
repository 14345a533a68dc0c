// Request bodies of /resource_classes, as placement/schemas/resource_class.py:
// only custom names (CUSTOM_ + upper-case, digits, underscore), at most 255.
import * as z from 'zod';

export const CUSTOM_RC_PATTERN = /^CUSTOM_[A-Z0-9_]+$/;

/** POST /resource_classes and PUT /resource_classes/{name} before 1.7; from 1.7 the path name is checked with it. */
export const resourceClassBodySchema = z
  .object({
    name: z.string().regex(CUSTOM_RC_PATTERN).max(255),
  })
  .strict();
