// Cyborg 2026.1 (CVE-2026-40214): bind, unbind and deleting a bound ARQ need an
// admin, or a service token beside the user's token; ARQs stay in their
// project for every verb. In noauth2 (roles from X-Service-Roles) and in token
// mode (the service token is a configured token with the service role).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindBody, fpgaProfile, makeCyborgApp, seedHost, type CyborgTestApp } from './helpers.js';

type Arq = { uuid: string; state: string; instance_uuid: string | null };
type Headers = Record<string, string>;
const faultOf = async (res: Response) =>
  (JSON.parse(((await res.json()) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
const unbindBody = (uuid: string) => ({
  [uuid]: [
    { path: '/hostname', op: 'remove' },
    { path: '/instance_uuid', op: 'remove' },
    { path: '/device_rp_uuid', op: 'remove' },
  ],
});

/** The same checks for both auth strategies: `as` names the callers. */
function serviceTokenRules(
  strategy: string,
  env: Record<string, string>,
  as: {
    member: Headers;
    memberWithService: Headers;
    memberWithNonService: Headers;
    otherProjectWithService: Headers;
    admin: Headers;
  },
) {
  describe(`service tokens (${strategy})`, () => {
    let t: CyborgTestApp;
    beforeAll(async () => {
      t = await makeCyborgApp(env);
      await seedHost(t, 4);
      expect((await t.acc('POST', '/device_profiles', { body: fpgaProfile(), headers: as.admin })).status).toBe(201);
    });
    afterAll(() => t.close());

    const createArq = async (headers = as.member): Promise<Arq> => {
      const res = await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' }, headers });
      expect(res.status).toBe(201);
      return ((await res.json()) as { arqs: Arq[] }).arqs[0]!;
    };
    const stateOf = async (uuid: string) =>
      ((await (await t.acc('GET', `/accelerator_requests/${uuid}`, { headers: as.admin })).json()) as Arq).state;
    const bind = (uuid: string, headers: Headers, instance = crypto.randomUUID()) =>
      t.acc('PATCH', '/accelerator_requests', { body: bindBody(uuid, instance), headers });
    const boundArq = async () => {
      const arq = await createArq();
      const instance = crypto.randomUUID();
      expect((await bind(arq.uuid, as.memberWithService, instance)).status).toBe(202);
      await t.jobs.queue.idle();
      expect(await stateOf(arq.uuid)).toBe('Bound');
      return { arq, instance };
    };

    it('refuses bind and unbind to a project member alone, or with a non-service token beside', async () => {
      const arq = await createArq();
      for (const headers of [as.member, as.memberWithNonService]) {
        const res = await bind(arq.uuid, headers);
        expect(res.status).toBe(403);
        expect(await faultOf(res)).toContain('service token (X-Service-Token)');
        expect((await t.acc('PATCH', `/accelerator_requests/${arq.uuid}`, { body: unbindBody(arq.uuid), headers })).status).toBe(403);
      }
      expect(await stateOf(arq.uuid)).toBe('Initial');
    });

    it('binds and unbinds for a member with a service token, and for an admin alone', async () => {
      const { arq } = await boundArq();
      expect(
        (await t.acc('PATCH', `/accelerator_requests/${arq.uuid}`, { body: unbindBody(arq.uuid), headers: as.memberWithService })).status,
      ).toBe(202);
      expect(await stateOf(arq.uuid)).toBe('Unbound');
      expect((await bind(arq.uuid, as.admin)).status).toBe(202);
      await t.jobs.queue.idle();
      expect(await stateOf(arq.uuid)).toBe('Bound');
      expect((await t.acc('PATCH', '/accelerator_requests', { body: unbindBody(arq.uuid), headers: as.admin })).status).toBe(202);
    });

    it('checks authorization before the body: 403 for a member alone, whatever the body', async () => {
      for (const body of ['{not json', { nope: [{ op: 'replace' }] }, []]) {
        expect((await t.acc('PATCH', '/accelerator_requests', { body, headers: as.member })).status).toBe(403);
      }
      expect((await t.acc('PATCH', '/accelerator_requests', { body: '{not json', headers: as.memberWithService })).status).toBe(400);
    });

    it('lets a member delete an unbound ARQ, but a bound one only with a service token', async () => {
      const fresh = await createArq();
      expect((await t.acc('DELETE', `/accelerator_requests/${fresh.uuid}`, { headers: as.member })).status).toBe(204);

      const { arq, instance } = await boundArq();
      expect((await t.acc('DELETE', `/accelerator_requests/${arq.uuid}`, { headers: as.member })).status).toBe(403);
      expect((await t.acc('DELETE', `/accelerator_requests?arqs=${arq.uuid}`, { headers: as.memberWithNonService })).status).toBe(403);
      expect((await t.acc('DELETE', `/accelerator_requests?instance=${instance}`, { headers: as.member })).status).toBe(403);
      expect(await stateOf(arq.uuid)).toBe('Bound');
      expect((await t.acc('DELETE', `/accelerator_requests?instance=${instance}`, { headers: as.memberWithService })).status).toBe(204);
      expect((await t.acc('GET', `/accelerator_requests/${arq.uuid}`, { headers: as.admin })).status).toBe(404);

      const other = await boundArq();
      expect((await t.acc('DELETE', `/accelerator_requests/${other.arq.uuid}`, { headers: as.admin })).status).toBe(204);
    });

    it('keeps ARQs in their project for every verb, service token or not', async () => {
      const { arq, instance } = await boundArq();
      const other = as.otherProjectWithService;
      expect((await t.acc('GET', `/accelerator_requests/${arq.uuid}`, { headers: other })).status).toBe(404);
      expect((await t.acc('PATCH', '/accelerator_requests', { body: unbindBody(arq.uuid), headers: other })).status).toBe(404);
      expect((await t.acc('DELETE', `/accelerator_requests/${arq.uuid}`, { headers: other })).status).toBe(404);
      expect((await t.acc('DELETE', `/accelerator_requests?instance=${instance}`, { headers: other })).status).toBe(204);
      expect(await stateOf(arq.uuid)).toBe('Bound');
      const fresh = await createArq();
      expect((await bind(fresh.uuid, other)).status).toBe(404);
      expect(await stateOf(fresh.uuid)).toBe('Initial');
    });
  });
}

const member = { 'x-auth-token': 'u1:p1', 'x-roles': 'member,reader' };
serviceTokenRules(
  'noauth2',
  {},
  {
    member,
    memberWithService: { ...member, 'x-service-token': 'nova', 'x-service-roles': 'service' },
    memberWithNonService: { ...member, 'x-service-token': 'u9', 'x-service-roles': 'member,admin' },
    otherProjectWithService: {
      'x-auth-token': 'u2:p2',
      'x-roles': 'member,reader',
      'x-service-token': 'nova',
      'x-service-roles': 'service',
    },
    admin: { 'x-auth-token': 'admin' },
  },
);

const TOKENS = {
  // seedHost and the test helpers call as "admin".
  admin: { roles: ['admin', 'member', 'reader'], project_id: 'ops' },
  'tok-alice': { roles: ['member', 'reader'], project_id: 'p1', user_id: 'alice' },
  'tok-bob': { roles: ['member', 'reader'], project_id: 'p2', user_id: 'bob' },
  'tok-nova': { roles: ['service'], project_id: 'service', user_id: 'nova' },
  'tok-carol-admin': { roles: ['admin'], project_id: 'p3', user_id: 'carol' },
};
serviceTokenRules(
  'token',
  { PLACEMENT_AUTH_STRATEGY: 'token', PLACEMENT_AUTH_TOKENS: JSON.stringify(TOKENS) },
  {
    member: { 'x-auth-token': 'tok-alice' },
    memberWithService: { 'x-auth-token': 'tok-alice', 'x-service-token': 'tok-nova' },
    // A valid token without the service role (even an admin's) is no service token.
    memberWithNonService: { 'x-auth-token': 'tok-alice', 'x-service-token': 'tok-carol-admin' },
    otherProjectWithService: { 'x-auth-token': 'tok-bob', 'x-service-token': 'tok-nova' },
    admin: { 'x-auth-token': 'admin' },
  },
);

describe('service tokens in token mode', () => {
  let t: CyborgTestApp;
  beforeAll(async () => {
    t = await makeCyborgApp({ PLACEMENT_AUTH_STRATEGY: 'token', PLACEMENT_AUTH_TOKENS: JSON.stringify(TOKENS) });
  });
  afterAll(() => t.close());

  it('answers 401 when the service token does not authenticate, as keystonemiddleware', async () => {
    for (const service of ['nope', '__proto__', 'toString', '']) {
      const res = await t.acc('GET', '/accelerator_requests', { headers: { 'x-auth-token': 'tok-alice', 'x-service-token': service } });
      expect(res.status, service).toBe(401);
    }
    expect(
      (await t.acc('GET', '/accelerator_requests', { headers: { 'x-auth-token': 'tok-alice', 'x-service-token': 'tok-nova' } })).status,
    ).toBe(200);
  });
});

describe('device, deployable and attribute reads (2026.1 rules, unchanged)', () => {
  let t: CyborgTestApp;
  beforeAll(async () => {
    t = await makeCyborgApp();
    await seedHost(t, 1);
  });
  afterAll(() => t.close());

  it('lets a project manager or an admin read them; a plain member gets 403, service token or not', async () => {
    const manager = { 'x-auth-token': 'm1:p1', 'x-roles': 'manager,member,reader' };
    const memberWithService = {
      'x-auth-token': 'u1:p1',
      'x-roles': 'member,reader',
      'x-service-token': 'nova',
      'x-service-roles': 'service',
    };
    for (const path of ['/devices', '/deployables', '/attributes']) {
      expect((await t.acc('GET', path)).status, path).toBe(200);
      expect((await t.acc('GET', path, { headers: manager })).status, path).toBe(200);
      expect((await t.acc('GET', path, { headers: { 'x-auth-token': 'u1:p1', 'x-roles': 'member,reader' } })).status, path).toBe(403);
      expect((await t.acc('GET', path, { headers: memberWithService })).status, path).toBe(403);
    }
  });

  it("keeps the agent's report endpoint to admins and the service role", async () => {
    const report = { devices: [] };
    expect(
      (await t.acc('GET', '/hosts/compute-0.example/devices', { headers: { 'x-auth-token': 'agent', 'x-roles': 'service' } })).status,
    ).toBe(200);
    expect(
      (await t.acc('PUT', '/hosts/other/devices', { body: report, headers: { 'x-auth-token': 'u1:p1', 'x-roles': 'member,manager' } }))
        .status,
    ).toBe(403);
  });
});
