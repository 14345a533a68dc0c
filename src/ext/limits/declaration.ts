// Project limits, declared once: a project's usage of a class, by the
// consumers that count, stays within the limit of (project, class), the
// project's own, else the registered default (the row of project ''). Every
// path is derived from this declaration by placement/capacity.ts: the
// claim guard's decision and its SQL (guard.ts), the candidates' rule
// (ext_within_limits, params.ts) and the audit (GET /ext/limits, service.ts).
import { LIMIT, LIMIT_USAGE } from '../../db/columns.js';
import type { ProjectConstraint } from '../../placement/capacity.js';
import { REGISTERED } from './model.js';
import { countedSql } from './sql.js';

export const PROJECT_LIMITS: ProjectConstraint = {
  name: 'project limits',
  bounds: {
    table: 'ext_limits',
    project: LIMIT.project,
    resourceClass: LIMIT.resourceClass,
    bound: (l) => `${l}.${LIMIT.resourceLimit}`,
    everyProject: REGISTERED,
  },
  usage: {
    table: 'ext_limit_usage',
    project: LIMIT_USAGE.projectId,
    resourceClass: LIMIT_USAGE.resourceClassId,
    used: (u) => `${u}.${LIMIT_USAGE.used}`,
  },
  counted: countedSql,
};
