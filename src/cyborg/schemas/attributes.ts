// POST /v2/attributes: {"deployable_id": "1", "key": "rc", "value": "FPGA"}. The
// reference sample sends the deployable id as a string; an integer is taken too.
import * as z from 'zod';

/** Digits of a positive id, read as a number no larger than JavaScript's exact integers (SQLite takes no Infinity). */
const positiveIdDigits = z
  .string()
  .regex(/^[1-9][0-9]*$/, 'must be a positive integer')
  .transform(Number)
  .refine((n) => n <= Number.MAX_SAFE_INTEGER, `must be at most ${Number.MAX_SAFE_INTEGER}`);

export const CreateAttributeBody = z
  .object({
    deployable_id: z.union([z.int().min(1), positiveIdDigits]),
    key: z.string().min(1).max(255),
    value: z.string().max(255),
  })
  .strict();
export type CreateAttributeBody = z.infer<typeof CreateAttributeBody>;

/** ?deployable_id= filter on GET /v2/attributes. */
export const AttributeListQuery = z.object({
  deployable_id: positiveIdDigits.optional(),
});
