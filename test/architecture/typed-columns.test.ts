// Hand-written statements name their columns through src/db/columns.ts
// (columnNames of each drizzle table), so a column renamed or dropped in
// src/db/schema fails `npm run typecheck` where a statement or a row decoder
// still names it. The @ts-expect-error lines below are checked by
// `npm run typecheck` (tsconfig includes test/): if a misspelt or dropped
// column stopped being an error, the unused directive would fail it.
import { getTableColumns, getTableName, is } from 'drizzle-orm';
import { integer, SQLiteTable, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { describe, expect, it } from 'vitest';
import * as columns from '../../src/db/columns.js';
import { columnNames } from '../../src/db/rows.js';
import * as schema from '../../src/db/schema/index.js';

describe('typed column names', () => {
  it('a key the table does not have fails typecheck', () => {
    // @ts-expect-error: resource_providers has `generation`, not `generations`
    const misspelt: string = columns.RP.generations;
    expect(misspelt).toBeUndefined();
    // @ts-expect-error: inventories has no `used` (usage is summed from allocations)
    const notThere: string = columns.INV.used;
    expect(notThere).toBeUndefined();
    expect(`UPDATE resource_providers SET ${columns.RP.generation} = ?`).toBe('UPDATE resource_providers SET generation = ?');
  });

  it('renaming a column in the schema fails where the old key is read', () => {
    const before = columnNames(sqliteTable('t', { id: integer('id').primaryKey(), rootUuid: text('root_uuid') }));
    const after = columnNames(sqliteTable('t', { id: integer('id').primaryKey(), rootProviderUuid: text('root_uuid') }));
    expect(before.rootUuid).toBe('root_uuid');
    // @ts-expect-error: the key was renamed; a statement still naming it no longer compiles
    expect(after.rootUuid).toBeUndefined();
    expect(after.rootProviderUuid).toBe('root_uuid');
  });

  it('src/db/columns.ts names every table of the schema, each column by its SQL name', () => {
    const tables = (Object.values(schema) as unknown[]).filter((value): value is SQLiteTable => is(value, SQLiteTable));
    const named = new Map<string, Record<string, string>>();
    for (const table of tables)
      named.set(getTableName(table), Object.fromEntries(Object.entries(getTableColumns(table)).map(([k, c]) => [k, c.name])));
    const covered = Object.values(columns).map((names) => JSON.stringify(names));
    for (const [table, names] of named) expect(covered, `columns.ts has no entry for ${table}`).toContain(JSON.stringify(names));
    expect(Object.keys(columns).length).toBe(named.size);
  });
});
