// What placement-admin simulate prints of POST /ext/simulate's answer
// (docs/simulate.md). The command itself is declared in ./extension.ts (an
// AdminCommand: src/diagnostics/admin-cli.ts reads the file, checks it with the
// server's own schema, sends it and checks the answer with the server's own
// response schema); nothing here imports the CLI, so the app does not carry it.
import type * as z from 'zod';
import type { SimulationResponse } from './responses.js';

const signed = (n: number) => (n > 0 ? `+${n}` : String(n));
const hosts = (allocations: Record<string, unknown> | null) => (allocations ? Object.keys(allocations).join(' ') : '(nowhere)');

/** A table laid out by the CLI: a header row, then rows, columns padded. */
type Table = (headers: string[], rows: string[][]) => string[];

/** The answer in words (placement-admin simulate without --json). */
export function formatSimulation(answer: z.infer<typeof SimulationResponse>, table: Table): string[] {
  const lines = ['What if (nothing was written):'];
  for (const c of answer.changes) lines.push(`  ${c.op}: ${c.matched} matched${c.skipped?.length ? `, ${c.skipped.length} skipped` : ''}`);
  lines.push('', 'Headroom (claims of each query that fit):');
  lines.push(
    ...table(
      ['QUERY', 'BEFORE', 'AFTER', 'CHANGE', 'TREES BEFORE', 'TREES AFTER'],
      answer.queries.map((q) => [
        q.name,
        String(q.before.total),
        String(q.after.total),
        signed(q.after.total - q.before.total),
        String(q.before.trees),
        String(q.after.trees),
      ]),
    ),
  );
  lines.push('', `Consumers that would no longer fit where they are: ${answer.displaced.length}`);
  if (answer.displaced.length) {
    lines.push(
      ...table(
        ['CONSUMER', 'REASON', 'NOW ON', 'COULD GO TO'],
        answer.displaced.map((d) => [d.consumer_uuid, d.reason, hosts(d.from), hosts(d.could_go)]),
      ),
    );
  }
  lines.push('', `Inventories over capacity after: ${answer.over_capacity.after.length}`);
  if (answer.over_capacity.after.length) {
    lines.push(
      ...table(
        ['PROVIDER', 'CLASS', 'USED', 'CAPACITY'],
        answer.over_capacity.after.map((o) => [o.resource_provider_uuid, o.resource_class, String(o.used), String(o.capacity)]),
      ),
    );
  }
  const { before, after } = answer.dashboard;
  lines.push(
    '',
    `Dashboard: providers ${before.total_providers} -> ${after.total_providers}, needing attention ${before.attention_total} -> ${after.attention_total}`,
  );
  const classes = [...new Set([...Object.keys(before.resource_classes), ...Object.keys(after.resource_classes)])].sort();
  lines.push(
    ...table(
      ['CLASS', 'CAPACITY', 'USED', 'FREE', 'OVER CAPACITY'],
      classes.map((name) => {
        const b = before.resource_classes[name];
        const a = after.resource_classes[name];
        const pair = (f: (x: NonNullable<typeof b>) => number) => `${b ? f(b) : '-'} -> ${a ? f(a) : '-'}`;
        return [name, pair((x) => x.capacity), pair((x) => x.used), pair((x) => x.free), pair((x) => x.over_capacity)];
      }),
    ),
  );
  return lines;
}
