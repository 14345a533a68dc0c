// A real Nova 26 on placement-edge (Keystone mode), driven as a user would (openstacksdk):
// the cloud of scripts/openstack-cloud.ts, the compute scenario and the capacity race of
// scenarios.ts, then seed 003 end to end (accelerator-scenario.ts). A Debian package the cloud needs that is not installed fails this file,
// naming it (test/helpers/parts.ts; .ci/run installs them).
import { afterAll, beforeAll } from 'vitest';
import { type Cloud, cloudMissing, startCloud } from '../../scripts/openstack-cloud.js';
import { describeWithPart } from '../helpers/parts.js';
import { PlacementReader, SdkSession } from './cloud-session.js';
import { acceleratorScenario } from './accelerator-scenario.js';
import { type CloudContext, computeScenario, raceScenario } from './scenarios.js';

let context: CloudContext | undefined;
const ctx = () => {
  if (!context) throw new Error('the cloud did not start');
  return context;
};

describeWithPart(cloudMissing(), 'a real Nova on placement-edge', () => {
  let cloud: Cloud | undefined;
  beforeAll(async () => {
    const t0 = Date.now();
    cloud = await startCloud({ placement: 'edge', log: (line) => console.log(line) });
    console.log(`openstack-cloud: placement-edge cloud started in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    context = { cloud, sdk: new SdkSession(cloud.adminEnv), placement: new PlacementReader(cloud) };
  }, 900_000);
  afterAll(async () => {
    context?.sdk.close();
    await cloud?.stop();
  }, 120_000);

  computeScenario(ctx);
  raceScenario(ctx);
  acceleratorScenario(ctx);
});
