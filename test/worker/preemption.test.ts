// Preemption inside workerd against sqld (docs/preemption.md): a priority,
// the search naming the victim, the one-batch preemption, an outsider refused
// the nominated capacity once the victim is gone, and the preemptor's draw.
// The database is shared with the other worker files: everything here uses
// its own class, provider and project.
import { describe, expect, it } from 'vitest';
import { adminCall as call, claimOfClass, hostOfOwnClass } from './admin-call.js';

describe('preemption in workerd', { timeout: 120_000 }, () => {
  it('search, preempt, refuse an outsider, draw', async () => {
    const { rc, host } = await hostOfOwnClass('PREEMPT', 4);
    const claim = (resources: number, owner: string, consumer = crypto.randomUUID(), query = '') =>
      claimOfClass(host, rc, resources, owner, consumer, query);
    const spot = crypto.randomUUID();
    const victim = crypto.randomUUID();
    expect((await claim(4, spot, victim)).status).toBe(204);
    expect((await call('PUT', `/ext/priorities/${spot}`, { priority: 0 })).status).toBe(200);
    const found = (await (await call('GET', `/ext/preemption_candidates?resources=${rc}:4&ext_priority=10`)).json()) as {
      allocation_requests: { victims: { consumer_uuid: string }[] }[];
    };
    expect(found.allocation_requests.map((r) => r.victims.map((v) => v.consumer_uuid))).toEqual([[victim]]);
    const project = crypto.randomUUID();
    const preemptor = crypto.randomUUID();
    const made = await call('POST', '/ext/preemptions', {
      preemptor: { consumer_uuid: preemptor, project_id: project, priority: 10, allocations: { [host]: { resources: { [rc]: 4 } } } },
      victims: [victim],
      grace_seconds: 60,
    });
    expect(made.status).toBe(201);
    const { id, hold_uuid } = (await made.json()) as { id: string; hold_uuid: string };
    expect(
      (
        await call('POST', '/ext/preemptions', {
          preemptor: {
            consumer_uuid: crypto.randomUUID(),
            project_id: project,
            priority: 10,
            allocations: { [host]: { resources: { [rc]: 4 } } },
          },
          victims: [victim],
          grace_seconds: 60,
        })
      ).status,
    ).toBe(409);
    expect((await call('DELETE', `/allocations/${victim}`)).status).toBe(204);
    expect((await claim(1, crypto.randomUUID())).status).toBe(409);
    expect((await claim(4, project, preemptor, `?ext_hold=${hold_uuid}`)).status).toBe(204);
    const shown = (await (await call('GET', `/ext/preemptions/${id}`)).json()) as { victims: { consumer_uuid: string }[] };
    expect(shown.victims.map((v) => v.consumer_uuid)).toEqual([victim]);
    // The events stream, read from a Worker (a long poll answers at once: events are there).
    const page = (await (await call('GET', '/ext/events?kind=preemption&wait=5&limit=1000')).json()) as {
      events: { kind: string; body: Record<string, unknown> }[];
    };
    const ours = page.events.filter((e) => e.body.preemption_id === id).map((e) => e.kind);
    expect(ours).toEqual(['preemption.created', 'preemption.victim_released', 'preemption.nomination_drawn']);
  });
});
