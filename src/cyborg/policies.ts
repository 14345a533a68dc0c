// Cyborg's default policy rules (POLICIES.md). Cyborg ships with
// enforce_new_defaults=False, so each endpoint passes when either the new
// default or its deprecated alternative passes: both are OR-ed here.
const base: Record<string, string> = {
  admin_api: 'role:admin',
  project_admin_api: 'role:admin and project_id:%(project_id)s',
  project_member_api: 'role:member and project_id:%(project_id)s',
  project_reader_api: 'role:reader and project_id:%(project_id)s',
  project_manager_api: 'role:manager and project_id:%(project_id)s',
  service_api: 'role:service',
  admin_or_owner: 'role:admin or project_id:%(project_id)s',
  project_member_or_admin: 'rule:project_member_api or rule:admin_api',
  project_reader_or_admin: 'rule:project_reader_api or rule:admin_api',
  project_manager_or_admin: 'rule:project_manager_api or rule:admin_api',
  project_member_or_service: 'rule:project_member_api or rule:service_api',
  // The host agent's report endpoints: admin or a service user.
  agent_api: 'rule:admin_api or rule:service_api',
};

const endpoints: Record<string, [newDefault: string, deprecated?: string]> = {
  'cyborg:device_profile:get_all': ['rule:project_reader_or_admin', 'rule:admin_or_owner'],
  'cyborg:device_profile:get_one': ['rule:project_reader_or_admin', 'rule:admin_or_owner'],
  'cyborg:device_profile:create': ['rule:admin_api'],
  'cyborg:device_profile:delete': ['rule:admin_api'],
  'cyborg:arq:get_all': ['rule:project_reader_or_admin', 'rule:admin_or_owner'],
  'cyborg:arq:get_one': ['rule:project_reader_or_admin', 'rule:admin_or_owner'],
  'cyborg:arq:create': ['rule:project_member_or_service', 'rule:project_member_or_admin'],
  'cyborg:arq:update': ['rule:project_member_or_service', 'rule:admin_or_owner'],
  'cyborg:arq:delete': ['rule:project_member_or_service', 'rule:admin_or_owner'],
  'cyborg:deployable:get_all': ['rule:project_manager_or_admin', 'rule:admin_api'],
  'cyborg:deployable:get_one': ['rule:project_manager_or_admin', 'rule:admin_api'],
  'cyborg:device:get_all': ['rule:project_manager_or_admin', 'rule:admin_api'],
  'cyborg:device:get_one': ['rule:project_manager_or_admin', 'rule:admin_api'],
  'cyborg:attribute:get_all': ['rule:project_manager_or_admin', 'rule:admin_api'],
  'cyborg:attribute:get_one': ['rule:project_manager_or_admin', 'rule:admin_api'],
  'cyborg:attribute:create': ['rule:admin_api'],
  'cyborg:attribute:delete': ['rule:admin_api'],
  'cyborg:device:enable': ['rule:admin_api'],
  'cyborg:device:disable': ['rule:admin_api'],
  'cyborg:agent:report': ['rule:agent_api'],
  'cyborg:outbox:get_all': ['rule:admin_api'],
};

export function cyborgPolicyRules(opts: { enforceNewDefaults: boolean; overrides?: Record<string, string> }): Record<string, string> {
  const rules = { ...base };
  for (const [name, [fresh, deprecated]] of Object.entries(endpoints)) {
    rules[name] = deprecated && !opts.enforceNewDefaults ? `(${fresh}) or (${deprecated})` : fresh;
  }
  return { ...rules, ...opts.overrides };
}
