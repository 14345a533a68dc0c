// A claim as Nova makes one for a new server: the body of
// PUT /allocations/{consumer} for a fresh project and user. Free of Node
// imports, so the Worker suite uses it too.

export function instanceClaim(rp: string, resources: Record<string, number>) {
  return {
    allocations: { [rp]: { resources } },
    project_id: crypto.randomUUID(),
    user_id: crypto.randomUUID(),
    consumer_generation: null,
    consumer_type: 'INSTANCE',
  };
}

/** A provider's `used` of one class in an allocation-candidates answer; undefined when the provider is not in it. */
export function usedIn(answer: unknown, rp: string, rc: string): number | undefined {
  const summaries = (answer as { provider_summaries: Record<string, { resources: Record<string, { used: number }> }> }).provider_summaries;
  return summaries[rp]?.resources[rc]?.used;
}

/** A project and a user that are the same on every run, for claims whose owner a test reads back. */
export const PROJECT = 'b7d8c0a4-4c1b-4c53-9c0a-0d1f6c1f0a01';
export const USER = 'c2a1f6e0-1b9b-4d6e-9a57-3d5f6a7b8c02';
