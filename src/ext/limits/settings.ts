// Project limits (extension, docs/limits.md): the settings, validated with the rest
// of the configuration (the extension's `settings`, which src/config.ts adds to
// its schema), and the one check a start makes of them together
// (limitsSettingsProblem). Off by default: a stock deployment installs no
// guard and reads no limit.
import * as z from 'zod';
import { StaticLimitsJson } from './model.js';

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no', 'True', 'False']).transform((v) => ['true', '1', 'yes', 'True'].includes(v));

/** A consumer type's name, as placement accepts it (1.38 consumer_type). */
const CONSUMER_TYPE = /^[A-Z0-9_]+$/;

export const LIMITS_SETTINGS = {
  /** off: no limits (upstream's behaviour); keystone: Keystone's unified limits; static: PLACEMENT_LIMITS_JSON. */
  PLACEMENT_LIMITS: z.enum(['off', 'keystone', 'static']).default('off'),
  /** static mode: {"registered": {"class:VCPU": 10}, "projects": {"<project id>": {"class:VCPU": 20}}}. */
  PLACEMENT_LIMITS_JSON: z.string().optional(),
  /** keystone mode: the service whose limits apply (name, type or id in Keystone's catalog). */
  PLACEMENT_LIMITS_SERVICE: z.string().min(1).default('nova'),
  /** keystone mode: the region whose limits apply (unset: limits of any region, which must then not repeat a name). */
  PLACEMENT_LIMITS_REGION: z.string().min(1).optional(),
  /** keystone mode: how often the limits are read again. */
  PLACEMENT_LIMITS_REFRESH_SECONDS: z.coerce.number().int().min(1).default(60),
  /** The consumer types a project's usage counts (MIGRATION left out: a resize is counted once). */
  PLACEMENT_LIMITS_CONSUMER_TYPES: z
    .string()
    .default('INSTANCE')
    .transform((v) =>
      v
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t !== ''),
    )
    .refine((types) => types.every((t) => CONSUMER_TYPE.test(t)), 'a comma-separated list of consumer types (A-Z, 0-9, _)'),
  /** Whether consumers without a type (written before microversion 1.38) count. */
  PLACEMENT_LIMITS_COUNT_UNTYPED: bool.default(true),
};

const LimitsSettings = z.object(LIMITS_SETTINGS);
export type LimitsSettings = z.infer<typeof LimitsSettings>;

/** What a start refuses: the setting, what is wrong, how to fix it. */
export interface LimitsSettingProblem {
  setting: string;
  problem: string;
  fix: string;
}

/** The service user the keystone mode signs in as (the same PLACEMENT_KEYSTONE_* as token validation). */
export interface KeystoneCredentialSettings {
  PLACEMENT_KEYSTONE_AUTH_URL?: string;
  PLACEMENT_KEYSTONE_USERNAME?: string;
  PLACEMENT_KEYSTONE_PASSWORD?: string;
}

const NEEDED_FOR_KEYSTONE = ['PLACEMENT_KEYSTONE_AUTH_URL', 'PLACEMENT_KEYSTONE_USERNAME', 'PLACEMENT_KEYSTONE_PASSWORD'] as const;

/** The first limits setting that cannot work, or undefined. */
export function limitsSettingsProblem(config: LimitsSettings & KeystoneCredentialSettings): LimitsSettingProblem | undefined {
  if (config.PLACEMENT_LIMITS === 'static') {
    const json = config.PLACEMENT_LIMITS_JSON;
    const fix = `set PLACEMENT_LIMITS_JSON='{"registered": {"class:VCPU": 10}, "projects": {"<project id>": {"class:VCPU": 20}}}'`;
    if (!json?.trim()) return { setting: 'PLACEMENT_LIMITS_JSON', problem: 'PLACEMENT_LIMITS=static but no limits are set', fix };
    const problem = staticLimitsProblem(json);
    if (problem) return { setting: 'PLACEMENT_LIMITS_JSON', problem, fix };
  }
  if (config.PLACEMENT_LIMITS === 'keystone') {
    const missing = NEEDED_FOR_KEYSTONE.find((name) => !config[name]?.trim());
    if (missing) {
      return {
        setting: missing,
        problem: 'PLACEMENT_LIMITS=keystone reads the limits as the service user, whose credentials are not all set',
        fix: `set ${NEEDED_FOR_KEYSTONE.join(', ')} (the service user, with the reader role on the system: openstack role add --user <user> --user-domain Default --system all reader)`,
      };
    }
  }
  return undefined;
}

function staticLimitsProblem(json: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (err) {
    return `not valid JSON (${err instanceof Error ? err.message : String(err)})`;
  }
  const result = StaticLimitsJson.safeParse(parsed);
  if (result.success) return undefined;
  const issue = result.error.issues[0]!;
  return `${issue.path.length ? `at ${issue.path.join('.')}: ` : ''}${issue.message}`;
}
