// Preemption priorities: PUT / GET / DELETE /ext/consumers/{uuid}/priority
// and /ext/priorities[/{project_id}] (project defaults), rows in ../priorities.ts;
// GET /ext/preemption_candidates, the search in ../search.ts.
import { invalid, notFound } from '../../../errors.js';
import { createPreemption, findPreemption } from '../preemptions.js';
import { RouteTable } from '../../../http/route-table.js';
import { queryParams, readBody } from '../../../http/validate.js';
import { invalidQuery } from '../../../placement/candidates/errors.js';
import { candidateQuery } from '../../../placement/http/candidate-query.js';
import { MV } from '../../../placement/versions.js';
import { findPreemptionCandidates } from '../search.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { consumerOfPath } from '../../../shared/uuid.js';
import { adminOnly } from '../../http/admin-only.js';
import {
  deleteConsumerPriority,
  deleteProjectPriority,
  getConsumerPriority,
  getProjectPriority,
  listProjectPriorities,
  putConsumerPriority,
  putProjectPriority,
} from '../priorities.js';
import {
  ConsumerPriorityResponse,
  MAX_PRIORITY,
  MIN_PRIORITY,
  PreemptionCandidatesResponse,
  PreemptionResponse,
  postPreemptionSchema,
  ProjectPriorityListResponse,
  ProjectPriorityResponse,
  preemptorPriorityParam,
  putPrioritySchema,
} from '../schemas.js';

export const priorityRoutes = new RouteTable('extensions', placementHttp);

priorityRoutes.resource('/consumers/:consumer_uuid/priority', {
  GET: adminOnly({
    summary: "Extension: a consumer's preemption priority (its own, or its project's default)",
    responses: { 200: 'The priority' },
    responseSchema: ConsumerPriorityResponse,
    responseName: 'ConsumerPriority',
    handler: async (c) => {
      const uuid = consumerOfPath(c.req.param('consumer_uuid'));
      const priority = await getConsumerPriority(c.var.deps.store, uuid);
      if (!priority) throw notFound(`Consumer '${uuid}' has no priority (not preemptible) or does not exist`);
      c.header('cache-control', 'no-cache');
      return c.json(priority);
    },
  }),
  PUT: adminOnly({
    summary: "Extension: set a consumer's preemption priority (it becomes preemptible by higher ones)",
    body: () => putPrioritySchema,
    bodyName: 'PutPriority',
    responses: { 200: 'The priority' },
    responseSchema: ConsumerPriorityResponse,
    responseName: 'ConsumerPriority',
    handler: async (c) => {
      const uuid = consumerOfPath(c.req.param('consumer_uuid'));
      const { priority } = await readBody(c, putPrioritySchema);
      const { deps } = c.var;
      const put = await putConsumerPriority(deps.store, uuid, priority, deps.clock().getTime());
      if (!put) throw notFound(`No consumer '${uuid}'`);
      return c.json(put);
    },
  }),
  DELETE: adminOnly({
    summary: "Extension: remove a consumer's own priority (its project's default applies again)",
    responses: { 204: 'Removed' },
    handler: async (c) => {
      const uuid = consumerOfPath(c.req.param('consumer_uuid'));
      if (!(await deleteConsumerPriority(c.var.deps.store, uuid))) throw notFound(`Consumer '${uuid}' has no priority of its own`);
      return c.body(null, 204);
    },
  }),
});

priorityRoutes.resource('/priorities', {
  GET: adminOnly({
    summary: "Extension: projects' default preemption priorities",
    responses: { 200: 'Project defaults' },
    responseSchema: ProjectPriorityListResponse,
    responseName: 'ProjectPriorityList',
    handler: async (c) => {
      c.header('cache-control', 'no-cache');
      return c.json({ priorities: await listProjectPriorities(c.var.deps.store) });
    },
  }),
});

priorityRoutes.resource('/priorities/:project_id', {
  GET: adminOnly({
    summary: "Extension: a project's default preemption priority",
    responses: { 200: 'The default' },
    responseSchema: ProjectPriorityResponse,
    responseName: 'ProjectPriority',
    handler: async (c) => {
      const project = c.req.param('project_id');
      const found = await getProjectPriority(c.var.deps.store, project);
      if (!found) throw notFound(`Project '${project}' has no default priority`);
      c.header('cache-control', 'no-cache');
      return c.json(found);
    },
  }),
  PUT: adminOnly({
    summary: "Extension: set a project's default preemption priority (its consumers without one become preemptible)",
    body: () => putPrioritySchema,
    bodyName: 'PutPriority',
    responses: { 200: 'The default' },
    responseSchema: ProjectPriorityResponse,
    responseName: 'ProjectPriority',
    handler: async (c) => {
      const project = c.req.param('project_id');
      const { priority } = await readBody(c, putPrioritySchema);
      const { deps } = c.var;
      return c.json(await putProjectPriority(deps.store, project, priority, deps.clock().getTime()));
    },
  }),
  DELETE: adminOnly({
    summary: "Extension: remove a project's default priority",
    responses: { 204: 'Removed' },
    handler: async (c) => {
      const project = c.req.param('project_id');
      if (!(await deleteProjectPriority(c.var.deps.store, project))) throw notFound(`Project '${project}' has no default priority`);
      return c.body(null, 204);
    },
  }),
});

export const preemptionCandidateRoutes = new RouteTable('extensions', placementHttp);

preemptionCandidateRoutes.resource('/preemption_candidates', {
  GET: adminOnly({
    summary:
      'Extension: allocation candidates for a preemptor of priority ext_priority, each with the lower-priority consumers to evict (fewest first) and their cost',
    since: MV.ALLOCATION_CANDIDATES,
    query: (mv) => [
      {
        name: 'ext_priority',
        description: "extension (docs/preemption.md): the preemptor's priority; only consumers below it are evicted",
      },
      ...candidateQuery(mv),
    ],
    responses: { 200: 'Candidates with their victims' },
    responseSchema: PreemptionCandidatesResponse,
    responseName: 'PreemptionCandidates',
    handler: async (c) => {
      const { ext_priority: given, ...query } = queryParams(c);
      if (!given || given.length !== 1) throw invalidQuery("'ext_priority' is required, once");
      const priority = preemptorPriorityParam.safeParse(given[0]);
      if (!priority.success) throw invalidQuery(`'ext_priority' must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY}`);
      const { store, candidates } = c.var.deps;
      const request = candidates.parse(query, c.var.mv);
      c.header('cache-control', 'no-cache');
      return c.json(
        await findPreemptionCandidates(
          store.nearby,
          request,
          priority.data,
          c.var.mv,
          candidates.options({ randomize: false }),
          c.var.deps.clock().getTime(),
        ),
      );
    },
  }),
});

export const preemptionRoutes = new RouteTable('extensions', placementHttp);

preemptionRoutes.resource('/preemptions', {
  POST: adminOnly({
    summary:
      "Extension: evict the victims (each leased for grace_seconds) and hold what they free for the preemptor's project (a nomination: claim it with ext_hold), in one write",
    body: () => postPreemptionSchema,
    bodyName: 'PostPreemption',
    responses: { 201: 'The preemption' },
    responseSchema: PreemptionResponse,
    responseName: 'Preemption',
    handler: async (c) => {
      const body = await readBody(c, postPreemptionSchema);
      const { deps } = c.var;
      const priority = body.preemptor.priority ?? (await getProjectPriority(deps.store, body.preemptor.project_id))?.priority;
      if (priority === undefined)
        throw invalid(`The preemptor has no priority: give preemptor.priority or a default for project '${body.preemptor.project_id}'`);
      const made = await createPreemption({ store: deps.store, nowMs: () => deps.clock().getTime(), newId: deps.newId }, body, priority);
      return c.json(made, 201);
    },
  }),
});

preemptionRoutes.resource('/preemptions/:id', {
  GET: adminOnly({
    summary: 'Extension: a preemption, its victims and its nomination',
    responses: { 200: 'The preemption' },
    responseSchema: PreemptionResponse,
    responseName: 'Preemption',
    handler: async (c) => {
      const id = c.req.param('id');
      const found = await findPreemption(c.var.deps.store, id);
      if (!found) throw notFound(`No preemption '${id}'`);
      c.header('cache-control', 'no-cache');
      return c.json(found);
    },
  }),
});
