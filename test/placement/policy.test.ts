import { describe, expect, it } from 'vitest';
import { noauthCredentials } from '../../src/http/auth.js';
import { PolicyEnforcer, type Credentials } from '../../src/http/policy.js';
import { placementPolicyRules } from '../../src/placement/policies.js';

const creds = (roles: string[], projectId: string | null = 'p1', systemScope: string | null = null): Credentials => ({
  userId: 'u1',
  projectId,
  roles,
  systemScope,
  serviceRoles: [],
});

describe('oslo.policy check strings', () => {
  const p = new PolicyEnforcer({
    admin: 'role:admin',
    owner: 'project_id:%(project_id)s',
    combo: 'rule:admin or (role:reader and rule:owner)',
    negated: 'not role:admin',
    always: '@',
    never: '!',
  });
  it('evaluates roles, rules, targets, and/or/not and parentheses', () => {
    expect(p.enforce('combo', creds(['reader']), { project_id: 'p1' })).toBe(true);
    expect(p.enforce('combo', creds(['reader']), { project_id: 'p2' })).toBe(false);
    expect(p.enforce('combo', creds(['admin']), { project_id: 'p2' })).toBe(true);
    expect(p.enforce('negated', creds(['admin']), {})).toBe(false);
    expect(p.enforce('always', creds([]), {})).toBe(true);
    expect(p.enforce('never', creds(['admin']), {})).toBe(false);
    expect(p.enforce('no-such-rule', creds(['admin']), {})).toBe(false);
  });
});

describe('placement default rules', () => {
  it('secure defaults: service may reshape, admin may not', () => {
    const p = new PolicyEnforcer(placementPolicyRules({ enforceNewDefaults: true }));
    expect(p.enforce('placement:reshaper:reshape', creds(['service']), {})).toBe(true);
    expect(p.enforce('placement:reshaper:reshape', creds(['admin']), {})).toBe(false);
    expect(p.enforce('placement:resource_providers:list', creds(['member', 'reader']), {})).toBe(false);
    expect(p.enforce('placement:usages', creds(['reader']), { project_id: 'p1' })).toBe(true);
    expect(p.enforce('placement:usages', creds(['reader']), { project_id: 'p2' })).toBe(false);
  });
  it('legacy mode also accepts the deprecated role:admin check', () => {
    const p = new PolicyEnforcer(placementPolicyRules({ enforceNewDefaults: false }));
    expect(p.enforce('placement:reshaper:reshape', creds(['admin']), {})).toBe(true);
    expect(p.enforce('placement:reshaper:reshape', creds(['member']), {})).toBe(false);
  });
  it('a policy file overrides rules by name', () => {
    const p = new PolicyEnforcer(placementPolicyRules({ enforceNewDefaults: true, overrides: { 'placement:traits:list': '@' } }));
    expect(p.enforce('placement:traits:list', creds([]), {})).toBe(true);
  });
});

describe('noauth2 credentials', () => {
  it('maps the admin token to admin and reads x-roles / x-project-id otherwise', () => {
    expect(noauthCredentials(new Headers({ 'x-auth-token': 'admin' }))?.roles).toContain('admin');
    const user = noauthCredentials(new Headers({ 'x-auth-token': 'user', 'x-roles': 'reader', 'x-project-id': 'abc' }));
    expect(user).toMatchObject({ roles: ['reader'], projectId: 'abc', systemScope: null });
    const sys = noauthCredentials(new Headers({ 'x-auth-token': 'user', 'openstack-system-scope': 'all' }));
    expect(sys?.projectId).toBeNull();
    expect(noauthCredentials(new Headers())).toBeNull();
  });

  it('takes service roles from X-Service-Roles, only beside an X-Service-Token', () => {
    const nova = noauthCredentials(
      new Headers({ 'x-auth-token': 'u1:p1', 'x-service-token': 'nova', 'x-service-roles': 'service, admin' }),
    );
    expect(nova).toMatchObject({ roles: [], projectId: 'p1', serviceRoles: ['service', 'admin'] });
    expect(noauthCredentials(new Headers({ 'x-auth-token': 'u1', 'x-service-roles': 'service' }))?.serviceRoles).toEqual([]);
  });
});

describe('service_roles checks', () => {
  it('match a role of the service token, not of the user token', () => {
    const p = new PolicyEnforcer({ svc: 'service_roles:service', both: 'role:member and service_roles:service' });
    expect(p.enforce('svc', { ...creds(['service']), serviceRoles: [] }, {})).toBe(false);
    expect(p.enforce('svc', { ...creds([]), serviceRoles: ['Service'] }, {})).toBe(true);
    expect(p.enforce('both', { ...creds(['member']), serviceRoles: ['service'] }, {})).toBe(true);
    expect(p.enforce('both', { ...creds(['member']), serviceRoles: ['member'] }, {})).toBe(false);
  });
});
