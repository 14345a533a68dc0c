// Preemption priorities: PUT / GET / DELETE /ext/consumers/{uuid}/priority
// and /ext/priorities[/{project_id}] (project defaults), rows in ../priorities.ts;
// GET /ext/preemption_candidates, the search in ../search.ts.
import type { Context } from 'hono';
import { invalid } from '../../../errors.js';
import type { AppEnv } from '../../../http/env.js';
import { createPreemption, findPreemption } from '../preemptions.js';
import { RouteTable } from '../../../http/route-table.js';
import { queryParams } from '../../../http/validate.js';
import { invalidQuery } from '../../../placement/candidates/errors.js';
import { candidateQuery } from '../../../placement/http/candidate-query.js';
import { MV } from '../../../placement/versions.js';
import { appAllocationIndexes } from '../cloud.js';
import { findPreemptionCandidates } from '../search.js';
import { appHolds } from '../../holds/installed.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { consumerOfPath } from '../../../shared/uuid.js';
import { adminJson } from '../../http/admin-only.js';
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

const CONSUMER_PRIORITY = { name: 'ConsumerPriority', schema: ConsumerPriorityResponse };
const PROJECT_PRIORITY = { name: 'ProjectPriority', schema: ProjectPriorityResponse };
const PUT_PRIORITY = { name: 'PutPriority', schema: putPrioritySchema };
const consumerOf = (c: Context<AppEnv, '/consumers/:consumer_uuid/priority'>) => consumerOfPath(c.req.param('consumer_uuid'));

priorityRoutes.resource('/consumers/:consumer_uuid/priority', {
  GET: adminJson({
    summary: "Extension: a consumer's preemption priority (its own, or its project's default)",
    answer: { description: 'The priority', ...CONSUMER_PRIORITY },
    fresh: true,
    missing: (c) => `Consumer '${consumerOf(c)}' has no priority (not preemptible) or does not exist`,
    run: (c) => getConsumerPriority(c.var.deps.store, consumerOf(c)),
  }),
  PUT: adminJson({
    summary: "Extension: set a consumer's preemption priority (it becomes preemptible by higher ones)",
    body: PUT_PRIORITY,
    answer: { description: 'The priority', ...CONSUMER_PRIORITY },
    missing: (c) => `No consumer '${consumerOf(c)}'`,
    run: (c, { priority }) => putConsumerPriority(c.var.deps.store, consumerOf(c), priority, c.var.deps.clock().getTime()),
  }),
  DELETE: adminJson({
    summary: "Extension: remove a consumer's own priority (its project's default applies again)",
    answer: { status: 204, description: 'Removed' },
    missing: (c) => `Consumer '${consumerOf(c)}' has no priority of its own`,
    run: (c) => deleteConsumerPriority(c.var.deps.store, consumerOf(c)),
  }),
});

priorityRoutes.resource('/priorities', {
  GET: adminJson({
    summary: "Extension: projects' default preemption priorities",
    answer: { description: 'Project defaults', name: 'ProjectPriorityList', schema: ProjectPriorityListResponse },
    fresh: true,
    run: async (c) => ({ priorities: await listProjectPriorities(c.var.deps.store) }),
  }),
});

priorityRoutes.resource('/priorities/:project_id', {
  GET: adminJson({
    summary: "Extension: a project's default preemption priority",
    answer: { description: 'The default', ...PROJECT_PRIORITY },
    fresh: true,
    missing: (c) => `Project '${c.req.param('project_id')}' has no default priority`,
    run: (c) => getProjectPriority(c.var.deps.store, c.req.param('project_id')),
  }),
  PUT: adminJson({
    summary: "Extension: set a project's default preemption priority (its consumers without one become preemptible)",
    body: PUT_PRIORITY,
    answer: { description: 'The default', ...PROJECT_PRIORITY },
    run: (c, { priority }) => putProjectPriority(c.var.deps.store, c.req.param('project_id'), priority, c.var.deps.clock().getTime()),
  }),
  DELETE: adminJson({
    summary: "Extension: remove a project's default priority",
    answer: { status: 204, description: 'Removed' },
    missing: (c) => `Project '${c.req.param('project_id')}' has no default priority`,
    run: (c) => deleteProjectPriority(c.var.deps.store, c.req.param('project_id')),
  }),
});

export const preemptionCandidateRoutes = new RouteTable('extensions', placementHttp);

preemptionCandidateRoutes.resource('/preemption_candidates', {
  GET: adminJson({
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
    answer: { description: 'Candidates with their victims', name: 'PreemptionCandidates', schema: PreemptionCandidatesResponse },
    fresh: true,
    run: (c) => {
      const { ext_priority: given, ...query } = queryParams(c);
      if (!given || given.length !== 1) throw invalidQuery("'ext_priority' is required, once");
      const priority = preemptorPriorityParam.safeParse(given[0]);
      if (!priority.success) throw invalidQuery(`'ext_priority' must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY}`);
      const { store, candidates } = c.var.deps;
      const request = candidates.parse(query, c.var.mv);
      return findPreemptionCandidates(
        store.nearby,
        appAllocationIndexes(c.var.deps.extensions),
        appHolds(c.var.deps.extensions).declaration,
        request,
        priority.data,
        c.var.mv,
        candidates.options({ randomize: false }),
        c.var.deps.clock().getTime(),
      );
    },
  }),
});

export const preemptionRoutes = new RouteTable('extensions', placementHttp);

const PREEMPTION = { name: 'Preemption', schema: PreemptionResponse };

preemptionRoutes.resource('/preemptions', {
  POST: adminJson({
    summary:
      "Extension: evict the victims (each leased for grace_seconds) and hold what they free for the preemptor's project (a nomination: claim it with ext_hold), in one write",
    body: { name: 'PostPreemption', schema: postPreemptionSchema },
    answer: { status: 201, description: 'The preemption', ...PREEMPTION },
    run: async (c, body) => {
      const { deps } = c.var;
      const priority = body.preemptor.priority ?? (await getProjectPriority(deps.store, body.preemptor.project_id))?.priority;
      if (priority === undefined)
        throw invalid(`The preemptor has no priority: give preemptor.priority or a default for project '${body.preemptor.project_id}'`);
      return createPreemption(
        {
          store: deps.store,
          nowMs: () => deps.clock().getTime(),
          newId: deps.newId,
          reported: (kind, event, nowMs) => deps.extensions.eventStatements(kind, event, nowMs),
        },
        body,
        priority,
      );
    },
  }),
});

preemptionRoutes.resource('/preemptions/:id', {
  GET: adminJson({
    summary: 'Extension: a preemption, its victims and its nomination',
    answer: { description: 'The preemption', ...PREEMPTION },
    fresh: true,
    missing: (c) => `No preemption '${c.req.param('id')}'`,
    run: (c) => findPreemption(c.var.deps.store, c.req.param('id')),
  }),
});
