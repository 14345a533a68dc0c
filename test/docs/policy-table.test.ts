// docs/keystone.md's table of which roles may call what is the one the rules
// give: scripts/policy-table.ts evaluates every rule of src/placement/policies.ts
// and src/cyborg/policies.ts for a caller with each role. A rule changed
// without the table (or the table edited by hand) fails here; the fix is
// `npx tsx scripts/policy-table.ts`.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOC, policyTable, withTable } from '../../scripts/policy-table.js';
import { placementPolicyRules } from '../../src/placement/policies.js';

describe("docs/keystone.md's policy table", () => {
  it('is the table the rules give (npx tsx scripts/policy-table.ts rewrites it)', () => {
    const doc = readFileSync(DOC, 'utf8');
    expect(doc).toContain(policyTable());
    expect(withTable(doc)).toBe(doc);
  });

  it("shows upstream's defaults: a project member may not list providers, a reader may read its usages", () => {
    const table = policyTable();
    expect(table).toContain('| `placement:resource_providers:list` | admin, service | admin, service |');
    expect(table).toContain('| `placement:usages` | admin, service, manager, member, reader |');
    // Every placement rule the service enforces is in the table.
    for (const rule of Object.keys(placementPolicyRules({ enforceNewDefaults: true })).filter((r) => r.startsWith('placement:'))) {
      expect(table).toContain(`| \`${rule}\` |`);
    }
  });
});
