// The project limits' periodic refresh, registered with the job runner like
// the other sweeps (src/jobs/registry.ts): it runs once per service, where the
// sweeps run (the Node primary's timer or the single process, the Worker's
// cron), and reads the limits again once PLACEMENT_LIMITS_REFRESH_SECONDS
// have passed since the last try.
import type { JobModule } from '../../jobs/registry.js';

export const limitsJobs: JobModule = { handlers: {}, sweeps: [async (deps) => (deps.limits ? deps.limits.refreshIfDue() : 0)] };
