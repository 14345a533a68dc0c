// ext_tolerate=KEY[,KEY...] on GET /allocation_candidates (and what takes its
// query): the taint keys whose NoSchedule/NoExecute taints the request
// tolerates. Repeated keys add up; the grammar is the taints' own (TAINT_KEY).
import { invalidQuery } from '../../placement/candidates/errors.js';
import type { CandidateParam } from '../../placement/candidates/index.js';

/** A taint key: as Kubernetes label keys, an optional DNS prefix and `/`, then a name (1-63 of [A-Za-z0-9._-]). */
export const TAINT_KEY = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

export const tolerateParam: CandidateParam<readonly string[]> = {
  name: 'ext_tolerate',
  description: 'extension: taint keys (KEY[,KEY...]) whose NoSchedule/NoExecute taints this request tolerates',
  parse(values) {
    const keys = values.flatMap((v) => v.split(',').map((k) => k.trim()));
    const bad = keys.find((k) => !TAINT_KEY.test(k));
    if (bad !== undefined) {
      throw invalidQuery(`ext_tolerate: '${bad.slice(0, 200)}' is not a taint key (KEY[,KEY...], each as a Kubernetes label key)`);
    }
    return [...new Set(keys)];
  },
};
