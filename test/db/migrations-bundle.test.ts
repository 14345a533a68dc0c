// The Worker runs the migrations compiled into src/db/migrations.generated.ts;
// they must be exactly drizzle/'s.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderMigrationsModule } from '../../scripts/bundle-migrations.js';

describe('bundled migrations', () => {
  it('match drizzle/ (run `npm run db:generate` or `tsx scripts/bundle-migrations.ts`)', () => {
    const onDisk = readFileSync(new URL('../../src/db/migrations.generated.ts', import.meta.url), 'utf8');
    expect(onDisk).toBe(renderMigrationsModule());
  });
});
