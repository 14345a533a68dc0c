// A real Nova 26 on placement-edge (Keystone mode), driven as a user would (openstacksdk):
// the cloud of scripts/openstack-cloud.ts, the compute scenario and the capacity race of
// scenarios.ts, then seed 003 end to end (accelerator-scenario.ts). A Debian package the
// cloud needs that is not installed fails this file, naming it (.ci/run installs them).
import { acceleratorScenario } from './accelerator-scenario.js';
import { computeScenario, describeCloud, raceScenario } from './scenarios.js';

describeCloud('edge', 'a real Nova on placement-edge', (ctx) => {
  computeScenario(ctx);
  raceScenario(ctx);
  acceleratorScenario(ctx);
});
