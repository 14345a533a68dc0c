// Shared by the what-if tests: simulation and defrag calls, a plan applied
// move by move with real POST /allocations, and every row and generation of
// the database read back (to prove nothing was written).
import type { Client } from '@libsql/client';
import { expect } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';

type Allocations = Record<string, { resources: Record<string, number> }>;

export interface Move {
  consumer_uuid: string;
  project_id: string;
  user_id: string;
  consumer_type: string | null;
  consumer_generation: number;
  from: Allocations;
  to: Allocations;
}

export interface Plan {
  count: number;
  max_moves: number;
  candidates_before: number;
  candidates_after: number;
  feasible: boolean;
  moves: Move[];
  resources_moved: Record<string, number>;
}

export async function defrag(t: TestApp, query: string): Promise<Plan> {
  const res = await t.call('GET', `/ext/defrag?${query}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Plan;
}

/** Each move as its own POST /allocations (a migration's target claim), in order: every one must be granted. */
export async function applyPlan(t: TestApp, plan: Plan): Promise<void> {
  for (const move of plan.moves) {
    const res = await t.call('POST', '/allocations', {
      body: {
        [move.consumer_uuid]: {
          allocations: move.to,
          project_id: move.project_id,
          user_id: move.user_id,
          consumer_generation: move.consumer_generation,
          consumer_type: move.consumer_type ?? 'INSTANCE',
        },
      },
    });
    expect(res.status, await res.clone().text()).toBe(204);
  }
}

const TABLES = [
  'resource_providers',
  'inventories',
  'allocations',
  'consumers',
  'resource_provider_traits',
  'resource_provider_aggregates',
  'placement_aggregates',
  'ext_provider_taints',
  'ext_leases',
  'ext_holds',
  'ext_hold_amounts',
  'ext_hold_draws',
  'placement_tree_changes',
  'projects',
  'users',
  'traits',
  'resource_classes',
];

/** Every row of the tables a simulation reads, the generations among them: equal before and after means nothing was written. */
export async function everyRow(client: Client): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of TABLES) out[table] = (await client.execute(`SELECT * FROM ${table} ORDER BY rowid`)).rows.map((r) => ({ ...r }));
  out.changes = (await client.execute('SELECT total_changes() AS n')).rows.map((r) => ({ ...r }));
  return out;
}
