// The same steps on OpenStack Placement 8.0.0 (Debian's placement-api under uwsgi with
// keystonemiddleware), side by side with placement-edge.test.ts: the compute scenario and the
// capacity race of scenarios.ts (8.0.0 has no accelerator API). A Debian package the cloud
// needs that is not installed fails this file, naming it (.ci/run installs them).
import { computeScenario, describeCloud, raceScenario } from './scenarios.js';

describeCloud('8.0.0', 'a real Nova on OpenStack Placement 8.0.0', (ctx) => {
  computeScenario(ctx);
  raceScenario(ctx);
});
