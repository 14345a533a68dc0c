// ext_within_limits=true on GET /allocation_candidates (docs/limits.md): the
// candidates answer none when the request alone would cross the caller's
// project limit (the gate below; why-no-host reports it as project_limit).
import * as z from 'zod';
import type { DiagnosisPart } from '../../diagnostics/why-no-host.js';
import { invalidQuery } from '../../placement/candidates/errors.js';
import { type CandidateGate, type CandidateParam, extParam } from '../../placement/candidates/index.js';
import { crossingText, type ProjectLimits, requestedTotals } from './service.js';

export const withinLimitsParam: CandidateParam<boolean> = {
  name: 'ext_within_limits',
  parse(values) {
    const value = values.at(-1)!;
    if (value !== 'true' && value !== 'false') throw invalidQuery(`ext_within_limits: '${value.slice(0, 20)}' is not true or false`);
    return value === 'true';
  },
};

/** What why no host says of the gate (GET /diagnostics/allocation_candidates), under its key. */
export const withinLimitsDiagnosis: DiagnosisPart = {
  key: 'project_limit',
  schema: z
    .string()
    .optional()
    .describe(
      "ext_within_limits=true: the caller's project limit the request alone would cross, so GET /allocation_candidates answers none",
    ),
};

/** The gate of an app with limits on: a request with ext_within_limits=true that alone crosses the caller's limit gets none. */
export const withinLimitsGate = (limits: ProjectLimits): CandidateGate => ({
  name: 'project limits',
  diagnosisKey: withinLimitsDiagnosis.key,
  async refusal(request, caller) {
    if (!extParam(request, withinLimitsParam) || caller.projectId === null) return null;
    const crossing = await limits.crossing(caller.projectId, requestedTotals(request));
    return crossing ? crossingText(crossing) : null;
  },
});
