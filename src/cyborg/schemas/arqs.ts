// ARQ bodies: create, and the JSON-patch map Nova and the CLI send for bind/unbind.
import * as z from 'zod';

export const CreateArqBody = z.object({
  device_profile_name: z.string({ error: 'device_profile_name is required' }).min(1, 'device_profile_name is required'),
  // The CLI sends the group id as a string ("0") or null.
  device_profile_group_id: z
    .union([
      z.int().min(0),
      z
        .string()
        .regex(/^\d+$/)
        .transform(Number)
        .refine((n) => n <= Number.MAX_SAFE_INTEGER, `must be at most ${Number.MAX_SAFE_INTEGER}`),
      z.null(),
    ])
    .optional(),
  image_uuid: z.string().nullable().optional(),
});

const PatchOp = z
  .object({
    path: z.string(),
    op: z.enum(['add', 'remove']),
    value: z.string().optional(),
  })
  .strict();

export const PatchArqsBody = z.record(z.string(), z.array(PatchOp).min(1));
export type PatchArqsBody = z.infer<typeof PatchArqsBody>;

export const BIND_PATHS = ['/hostname', '/device_rp_uuid', '/instance_uuid'] as const;
export const PROJECT_PATH = '/project_id';
