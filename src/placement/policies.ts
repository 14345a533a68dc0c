// Placement's default policy rules (placement/policies/*.py, HEAD). With
// enforce_new_defaults off, each rule also passes on its deprecated check
// (role:admin), exactly as oslo.policy combines them. Operators override any
// rule by name from a JSON policy file.
const BASE_RULES = {
  admin_api: { current: 'role:admin' },
  service_api: { current: 'role:service', deprecated: 'role:admin' },
  admin_or_service_api: { current: 'role:admin or role:service', deprecated: 'role:admin' },
  project_reader_api: { current: 'role:reader and project_id:%(project_id)s', deprecated: 'role:admin' },
  admin_or_project_reader_or_service_api: {
    current: 'role:admin or rule:project_reader_api or role:service',
    deprecated: 'role:admin',
  },
} as const;

const A_S = 'rule:admin_or_service_api';
const ENDPOINT_RULES: Record<string, { current: string; deprecated?: string }> = {};
for (const name of [
  'resource_providers:list',
  'resource_providers:create',
  'resource_providers:show',
  'resource_providers:update',
  'resource_providers:delete',
  'resource_classes:list',
  'resource_classes:create',
  'resource_classes:show',
  'resource_classes:update',
  'resource_classes:delete',
  'resource_providers:inventories:list',
  'resource_providers:inventories:create',
  'resource_providers:inventories:show',
  'resource_providers:inventories:update',
  'resource_providers:inventories:delete',
  'resource_providers:aggregates:list',
  'resource_providers:aggregates:update',
  'resource_providers:usages',
  'traits:list',
  'traits:show',
  'traits:update',
  'traits:delete',
  'resource_providers:traits:list',
  'resource_providers:traits:update',
  'resource_providers:traits:delete',
  'allocations:manage',
  'allocations:list',
  'allocations:update',
  'allocations:delete',
  'resource_providers:allocations:list',
  'allocation_candidates:list',
]) {
  ENDPOINT_RULES[`placement:${name}`] = { current: A_S, deprecated: 'role:admin' };
}
ENDPOINT_RULES['placement:usages'] = {
  current: 'role:admin or (role:reader and project_id:%(project_id)s) or role:service',
  deprecated: 'role:admin',
};
ENDPOINT_RULES['placement:reshaper:reshape'] = { current: 'role:service', deprecated: 'role:admin' };

export type PlacementRule = keyof typeof ENDPOINT_RULES;

export function placementPolicyRules(opts: { enforceNewDefaults: boolean; overrides?: Record<string, string> }): Record<string, string> {
  const rules: Record<string, string> = {};
  for (const [name, rule] of Object.entries({ ...BASE_RULES, ...ENDPOINT_RULES })) {
    const deprecated = 'deprecated' in rule ? rule.deprecated : undefined;
    rules[name] = !opts.enforceNewDefaults && deprecated ? `(${rule.current}) or (${deprecated})` : rule.current;
  }
  return { ...rules, ...opts.overrides };
}
