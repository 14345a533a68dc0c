// Device profile bodies. The zod schema checks the shape; parseGroups applies
// Cyborg's key rules (_validate_post_request) with messages that say which key.
import { DomainError } from '../../errors.js';
import * as z from 'zod';

const GroupValue = z.union([z.string(), z.number().int()]);
const ProfileInput = z.object({
  name: z.string().regex(/^[a-zA-Z0-9-_]+$/, 'name must match ^[a-zA-Z0-9-_]+$'),
  uuid: z.uuid().optional(),
  description: z.string().max(255).nullable().optional(),
  groups: z.array(z.record(z.string(), GroupValue)).min(1, 'groups must not be empty'),
});

/** POST /device_profiles: a list with exactly one profile (the CLI and Cyborg both send a list). */
export const CreateDeviceProfileBody = z.preprocess(
  (body) => (Array.isArray(body) ? body : [body]),
  z.array(ProfileInput).length(1, 'the body is a list with exactly one device profile'),
);
export type DeviceProfileInput = z.infer<typeof ProfileInput>;
export type ProfileGroup = Record<string, string>;

const STANDARD_ACCELERATOR_CLASSES = new Set(['FPGA', 'GPU', 'VGPU', 'PGPU', 'CUSTOM_QAT', 'CUSTOM_NIC', 'CUSTOM_SSD']);
const CUSTOM_NAME = /^CUSTOM_[A-Z0-9_]+$/;
/** Placement's largest amount (its integer columns). */
const MAX_AMOUNT = 2147483647;

/** Validates every key of every group and returns them with string values. */
export function parseGroups(groups: Record<string, string | number>[]): ProfileGroup[] {
  return groups.map((group, index) => {
    const out: ProfileGroup = {};
    for (const [rawKey, rawValue] of Object.entries(group)) {
      const value = String(rawValue).trim();
      const colon = rawKey.indexOf(':');
      const prefix = colon < 0 ? rawKey : rawKey.slice(0, colon);
      const name = colon < 0 ? '' : rawKey.slice(colon + 1).trim();
      const where = `group ${index}, key '${rawKey}'`;
      if (prefix === 'resources') {
        if (!STANDARD_ACCELERATOR_CLASSES.has(name) && !CUSTOM_NAME.test(name)) {
          throw new DomainError(
            'invalid',
            `Bad resource class in ${where}: must be one of ${[...STANDARD_ACCELERATOR_CLASSES].join(', ')} or CUSTOM_*`,
          );
        }
        // Amounts become placement amounts: integers from 1 to placement's maximum, never 1e+23.
        if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > MAX_AMOUNT) {
          throw new DomainError(
            'invalid',
            `Bad resource amount in ${where}: '${value.slice(0, 40)}' is not an integer from 1 to ${MAX_AMOUNT}`,
          );
        }
        out[`resources:${name}`] = String(Number(value));
      } else if (prefix === 'trait') {
        if (!CUSTOM_NAME.test(name)) throw new DomainError('invalid', `Bad trait in ${where}: traits must be CUSTOM_*`);
        if (value !== 'required' && value !== 'forbidden') {
          throw new DomainError('invalid', `Bad trait value in ${where}: must be 'required' or 'forbidden'`);
        }
        out[`trait:${name}`] = value;
      } else if (prefix === 'accel' && name) {
        out[`accel:${name}`] = value;
      } else {
        throw new DomainError('invalid', `Bad key in ${where}: keys must start with resources:, trait: or accel:`);
      }
    }
    return out;
  });
}

/** What a group asks for, as the bind and ARQ creation read it. */
export interface GroupRequest {
  resources: Map<string, number>;
  required: string[];
  forbidden: string[];
  bitstreamId?: string;
  functionId?: string;
}

export function readGroup(group: ProfileGroup): GroupRequest {
  const req: GroupRequest = { resources: new Map(), required: [], forbidden: [] };
  for (const [key, value] of Object.entries(group)) {
    if (key.startsWith('resources:')) req.resources.set(key.slice(10), Number(value));
    else if (key.startsWith('trait:')) (value === 'required' ? req.required : req.forbidden).push(key.slice(6));
    else if (key === 'accel:bitstream_id') req.bitstreamId = value;
    else if (key === 'accel:function_id') req.functionId = value;
  }
  return req;
}

/** ARQs one group yields: the sum of its amounts, doubled for Xilinx FPGAs (two PFs). */
export function arqCountForGroup(group: ProfileGroup): number {
  const req = readGroup(group);
  let count = 0;
  for (const [rc, amount] of req.resources) {
    count += rc === 'FPGA' && req.required.includes('CUSTOM_FPGA_XILINX') ? 2 * amount : amount;
  }
  return count;
}
