// /v2/accelerator_requests: create, list (?instance=, ?bind_state=resolved),
// show, PATCH bind/unbind (also on /{uuid}, as pecan routes it), delete.
import { forbidden, invalid, notFound } from '../../../errors.js';
import { isResolved } from '../../arq-state.js';
import { authorize, cyborgError, isAdmin, projectScope, queryList, readCyborgBody, selfLink, type CyborgContext } from '../profile.js';
import { presentArq } from '../../present.js';
import {
  createArqs,
  deleteArqsByInstance,
  deleteArqsByUuid,
  findArq,
  listArqs,
  startBind,
  unbindArqs,
  type BindRequest,
} from '../../repo/arqs.js';
import { BIND_PATHS, CreateArqBody, PatchArqsBody, PROJECT_PATH } from '../../schemas/arqs.js';
import { ArqListQuery, parseQuery } from '../../schemas/queries.js';
import { MV } from '../../versions.js';
import { ArqDeleteQuery } from '../../schemas/queries.js';
import { ArqListSchema, ArqSchema } from '../../schemas/responses.js';
import { RouteTable, always, zodQuery, answers } from '../../../http/route-table.js';
import { cyborgHttp } from '../profile.js';

const link = (c: CyborgContext) => (collection: string, uuid: string) => selfLink(c, collection, uuid);
const badPatch = (reason: string) => invalid(`Couldn't apply patch. Reason: ${reason}`);

export const arqRoutes = new RouteTable('accelerator', cyborgHttp);

type Parsed = { op: 'add'; binds: BindRequest[] } | { op: 'remove'; uuids: string[] };

/** Validates the whole PATCH body before anything is applied. */
function parsePatch(c: CyborgContext, body: PatchArqsBody): Parsed {
  const entries = Object.entries(body);
  if (!entries.length) throw badPatch('no accelerator requests given');
  const ops = new Set(entries.flatMap(([, patch]) => patch.map((p) => p.op)));
  if (ops.size !== 1) throw badPatch('all operations in one request must be add, or all remove');
  const op = [...ops][0] as 'add' | 'remove';
  const binds: BindRequest[] = [];
  for (const [uuid, patch] of entries) {
    const values = new Map<string, string | undefined>();
    for (const p of patch) {
      if (p.path === PROJECT_PATH) {
        if (!c.var.mv.atLeast(MV.ARQ_PROJECT_ID)) {
          throw cyborgError(
            406,
            `Request not acceptable. The minimal required API version should be ${MV.ARQ_PROJECT_ID} to set project_id.`,
          );
        }
        if (!isAdmin(c)) throw forbidden('Only an admin may set project_id on an accelerator request.');
      } else if (!(BIND_PATHS as readonly string[]).includes(p.path)) {
        throw badPatch(`invalid path ${p.path}`);
      }
      if (op === 'add' && (p.value === undefined || p.value === '')) throw badPatch(`a value is needed for ${p.path}`);
      values.set(p.path, p.value);
    }
    if (op === 'add') {
      const missing = BIND_PATHS.filter((p) => !values.get(p));
      if (missing.length) throw badPatch(`bind of ${uuid} needs ${missing.join(', ')}`);
      binds.push({
        uuid,
        hostname: values.get('/hostname')!,
        deviceRpUuid: values.get('/device_rp_uuid')!,
        instanceUuid: values.get('/instance_uuid')!,
        projectId: values.get(PROJECT_PATH) ?? c.var.credentials.projectId,
      });
    }
  }
  return op === 'add' ? { op, binds } : { op, uuids: entries.map(([uuid]) => uuid) };
}

/**
 * CVE-2026-40214 (Cyborg 2026.1): bind, unbind and deleting a bound ARQ need an
 * admin, or a service token (X-Service-Token with the service role) beside the
 * user's token, so that a project member alone cannot point an ARQ at any
 * host's device. ARQ_ALLOW_BIND_WITHOUT_SERVICE_TOKEN turns this off for a
 * Nova that sends no service token.
 */
function mayBind(c: CyborgContext): boolean {
  return (
    c.var.deps.config.ARQ_ALLOW_BIND_WITHOUT_SERVICE_TOKEN ||
    isAdmin(c) ||
    c.var.credentials.serviceRoles.some((r) => r.toLowerCase() === 'service')
  );
}

const needsServiceToken = () =>
  forbidden(
    'Binding, unbinding and deleting a bound accelerator request need an admin token or a service token (X-Service-Token) beside the user token.',
  );

async function patchArqs(c: CyborgContext): Promise<Response> {
  authorize(c, 'cyborg:arq:update');
  if (!mayBind(c)) throw needsServiceToken();
  const parsed = parsePatch(c, await readCyborgBody(c, PatchArqsBody));
  const { deps } = c.var;
  const now = deps.clock();
  if (parsed.op === 'remove') {
    await unbindArqs(deps.store, parsed.uuids, projectScope(c), now.toISOString());
    return c.body(null, 202);
  }
  const job = await startBind(deps.store, parsed.binds, projectScope(c), now.toISOString(), now.getTime());
  // After commit; if the send is lost the outbox drain delivers the job.
  if (job)
    await deps.jobs.send(job).catch((err: unknown) => deps.log.warn('bind job send failed; the drain will deliver', { err: String(err) }));
  return c.body(null, 202);
}

async function deleteArqs(c: CyborgContext, uuids: string[] | undefined, instance: string | undefined): Promise<Response> {
  authorize(c, 'cyborg:arq:delete');
  if ((uuids === undefined) === (instance === undefined)) {
    throw invalid('Exactly one of the query parameters arqs and instance is needed.');
  }
  const { deps } = c.var;
  const now = deps.clock().toISOString();
  if (instance !== undefined) {
    // Every ARQ found by instance is bound to it.
    if (!mayBind(c)) throw needsServiceToken();
    await deleteArqsByInstance(deps.store, instance, projectScope(c), now);
    return c.body(null, 204);
  }
  const missing = await deleteArqsByUuid(deps.store, uuids!, projectScope(c), now, mayBind(c) ? undefined : needsServiceToken);
  if (missing.length) throw notFound(`Accelerator request(s) ${missing.join(', ')} could not be found.`);
  return c.body(null, 204);
}

arqRoutes.resource('/accelerator_requests', {
  GET: {
    summary: 'List accelerator requests',
    query: () => zodQuery(ArqListQuery),
    responses: { 200: 'ARQs', 423: 'bind_state=resolved: some ARQ of the instance is still binding (no body)' },
    bodyless: [423],
    responseSchema: ArqListSchema,
    responseName: 'ArqList',
    handler: async (c) => {
      authorize(c, 'cyborg:arq:get_all');
      const { instance, bind_state: bindState } = parseQuery(ArqListQuery, c.req.query());
      const rows = await listArqs(c.var.deps.store.db, { instance, project: projectScope(c) });
      if (bindState === 'resolved' && instance !== undefined && rows.some((r) => !isResolved(r.arq.state))) {
        return c.body(null, 423);
      }
      const shown = bindState === 'resolved' ? rows.filter((r) => isResolved(r.arq.state)) : rows;
      return c.json({ arqs: shown.map((r) => presentArq(r, link(c))) });
    },
  },
  POST: {
    summary: 'Create accelerator requests',
    body: always(CreateArqBody),
    bodyName: 'CreateArqs',
    ...answers(201, 'The ARQs', 'ArqList', ArqListSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:arq:create');
      const body = await readCyborgBody(c, CreateArqBody);
      const { deps } = c.var;
      const arqs = await createArqs(
        deps.store,
        body.device_profile_name,
        c.var.credentials.projectId,
        deps.newId,
        deps.clock().toISOString(),
        body.device_profile_group_id ?? undefined,
      );
      if (!arqs) throw notFound(`Device Profile not found with name=${body.device_profile_name}`);
      return c.json({ arqs: arqs.map((arq) => presentArq({ arq, handle: null }, link(c))) }, 201);
    },
  },
  PATCH: {
    summary: 'Bind or unbind ARQs',
    body: always(PatchArqsBody),
    bodyName: 'PatchArqs',
    responses: { 202: 'Accepted; binding runs asynchronously' },
    handler: patchArqs,
  },
  DELETE: {
    summary: 'Delete ARQs',
    query: () => zodQuery(ArqDeleteQuery),
    responses: { 204: 'Deleted' },
    handler: (c) => deleteArqs(c, queryList(c, 'arqs'), c.req.query('instance')),
  },
});

arqRoutes.resource('/accelerator_requests/:uuid', {
  GET: {
    summary: 'Show an ARQ',
    ...answers(200, 'The ARQ', 'Arq', ArqSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:arq:get_one');
      const uuid = c.req.param('uuid');
      const found = await findArq(c.var.deps.store.db, uuid, projectScope(c));
      if (!found) throw notFound(`Accelerator request ${uuid} could not be found.`);
      return c.json(presentArq(found, link(c)));
    },
  },
  PATCH: {
    summary: 'Bind or unbind ARQs',
    body: always(PatchArqsBody),
    bodyName: 'PatchArqs',
    responses: { 202: 'Accepted' },
    handler: patchArqs,
  },
  DELETE: {
    summary: 'Delete an ARQ',
    responses: { 204: 'Deleted' },
    handler: (c) => deleteArqs(c, [c.req.param('uuid')], undefined),
  },
});
