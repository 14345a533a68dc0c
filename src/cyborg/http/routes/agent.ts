// Endpoints for host agents (admin or service role): the device report (and
// reading it back), the
// "device programmed" report, and the outbox (dead letters) for operators.
import { invalid, notFound } from '../../../errors.js';
import { listOutbox } from '../../../jobs/outbox.js';
import { authorize, readCyborgBody, selfLink, type CyborgContext } from '../profile.js';
import { presentDeployable, presentDevice } from '../../present.js';
import { applyHostReport, currentHostReport, recordProgrammed } from '../../repo/devices.js';
import { HostDevicesReport, Hostname, ProgrammedReport } from '../../schemas/agent.js';
import { OutboxQuery, parseQuery } from '../../schemas/queries.js';
import type { OutboxListJson } from '../../schemas/responses.js';
import { DeployableSchema, HostReportSchema, OutboxListSchema, ReportedDevicesSchema } from '../../schemas/responses.js';
import { RouteTable, always, zodQuery, answers } from '../../../http/route-table.js';
import { cyborgHttp } from '../profile.js';

const link = (c: CyborgContext) => (collection: string, uuid: string) => selfLink(c, collection, uuid);
export const agentRoutes = new RouteTable('accelerator', cyborgHttp);

async function sendAll(c: CyborgContext, jobs: ({ type: 'bind' | 'nova-event'; outboxId: number } | undefined)[]) {
  const { deps } = c.var;
  for (const job of jobs) {
    if (job)
      await deps.jobs.send(job).catch((err: unknown) => deps.log.warn('job send failed; the drain will deliver', { err: String(err) }));
  }
}

agentRoutes.resource('/hosts/:hostname/devices', {
  // The host's last report, so an agent can send a new one only when it differs.
  GET: {
    summary: "A host's devices as its agent last reported them",
    ...answers(200, 'The report', 'StoredHostDevicesReport', HostReportSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:agent:report');
      return c.json(await currentHostReport(c.var.deps.store.db, c.req.param('hostname')));
    },
  },
  PUT: {
    summary: "Report a host's devices (host agent)",
    body: always(HostDevicesReport),
    bodyName: 'HostDevicesReport',
    ...answers(200, 'The devices', 'ReportedDevices', ReportedDevicesSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:agent:report');
      const named = Hostname.safeParse(c.req.param('hostname'));
      if (!named.success) throw invalid(`Invalid input: ${named.error.issues[0]!.message}.`);
      const hostname = named.data;
      const report = await readCyborgBody(c, HostDevicesReport);
      const { deps } = c.var;
      const now = deps.clock();
      const result = await applyHostReport(deps.store, hostname, report, deps.newId, now.toISOString(), now.getTime());
      await sendAll(c, result.jobs);
      return c.json({ devices: result.devices.map((d) => presentDevice(d, link(c), true)) });
    },
  },
});

agentRoutes.resource('/deployables/:uuid/programmed', {
  PUT: {
    summary: 'Report what a deployable is programmed with (host agent)',
    body: always(ProgrammedReport),
    bodyName: 'ProgrammedReport',
    ...answers(200, 'The deployable', 'Deployable', DeployableSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:agent:report');
      const uuid = c.req.param('uuid');
      const report = await readCyborgBody(c, ProgrammedReport);
      const { deps } = c.var;
      const now = deps.clock();
      const recorded = await recordProgrammed(deps.store, uuid, report, now.toISOString(), now.getTime());
      if (!recorded) throw notFound(`Deployable ${uuid} could not be found.`);
      await sendAll(c, [recorded.job]);
      return c.json(presentDeployable(recorded.deployable, recorded.deviceUuid, link(c)));
    },
  },
});

agentRoutes.resource('/outbox', {
  GET: {
    summary: 'Outbox rows (bind jobs, Nova events)',
    query: () => zodQuery(OutboxQuery),
    ...answers(200, 'Rows', 'OutboxList', OutboxListSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:outbox:get_all');
      const { state } = parseQuery(OutboxQuery, c.req.query());
      const rows = await listOutbox(c.var.deps.store.db, { state });
      return c.json({
        outbox: rows.map((r) => ({
          id: r.id,
          topic: r.topic,
          state: r.state,
          attempts: r.attempts,
          next_attempt_at: new Date(r.nextAttemptAt).toISOString(),
          last_error: r.lastError,
          payload: JSON.parse(r.payload) as unknown,
          created_at: r.createdAt,
          updated_at: r.updatedAt,
        })),
      } satisfies OutboxListJson);
    },
  },
});
