// Project limits (extension, docs/limits.md), as Keystone's unified limits name
// them: a registered limit is every project's default for a resource, a
// project limit overrides it for one project. Resource names
// `class:<RESOURCE_CLASS>` (oslo.limit's and Nova's convention) apply to that
// placement resource class; any other name (Nova's `servers`, ...) is not
// placement's to enforce and is left out.
import * as z from 'zod';

/** A resource class name, as placement accepts one. */
const RESOURCE_CLASS = /^[A-Z0-9_]+$/;
const CLASS_PREFIX = 'class:';

/** The resource class a Keystone resource name limits, or undefined when it names no class. */
export function classOfResourceName(name: string): string | undefined {
  if (!name.startsWith(CLASS_PREFIX)) return undefined;
  const rc = name.slice(CLASS_PREFIX.length);
  return RESOURCE_CLASS.test(rc) ? rc : undefined;
}

/** The limits in force: per class, the registered default and each project's override. */
export interface LimitSet {
  registered: ReadonlyMap<string, number>;
  projects: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

/** One row of the limits table: project '' is the registered default. */
export interface LimitRow {
  project: string;
  resourceClass: string;
  limit: number;
}

export const REGISTERED = '';

export function rowsOf(limits: LimitSet): LimitRow[] {
  const rows: LimitRow[] = [...limits.registered].map(([resourceClass, limit]) => ({ project: REGISTERED, resourceClass, limit }));
  for (const [project, classes] of limits.projects) {
    for (const [resourceClass, limit] of classes) rows.push({ project, resourceClass, limit });
  }
  return rows.sort((a, b) => a.project.localeCompare(b.project) || a.resourceClass.localeCompare(b.resourceClass));
}

/** The same limits, whatever the order they were listed in. */
export const sameLimits = (a: LimitSet, b: LimitSet) => JSON.stringify(rowsOf(a)) === JSON.stringify(rowsOf(b));

const ClassLimits = z.record(z.string(), z.number().int().min(0)).superRefine((limits, ctx) => {
  for (const name of Object.keys(limits)) {
    if (classOfResourceName(name) === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: `${JSON.stringify(name)} is not a resource name class:<RESOURCE_CLASS> (A-Z, 0-9, _)`,
      });
    }
  }
});

/** PLACEMENT_LIMITS_JSON: the registered defaults and the project overrides, by Keystone's resource names. */
export const StaticLimitsJson = z.strictObject({
  registered: ClassLimits.default({}),
  projects: z.record(z.string().min(1), ClassLimits).default({}),
});

export function staticLimits(json: string): LimitSet {
  const parsed = StaticLimitsJson.parse(JSON.parse(json));
  const classes = (named: Record<string, number>) =>
    new Map(Object.entries(named).map(([name, limit]) => [classOfResourceName(name)!, limit]));
  return {
    registered: classes(parsed.registered),
    projects: new Map(Object.entries(parsed.projects).map(([project, named]) => [project, classes(named)])),
  };
}
