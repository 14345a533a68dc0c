// What the usage-change triggers (drizzle/0015_usage_changes.sql) cost a write, in SQLite alone: a
// claim's two allocation rows inserted in one transaction, then deleted in another, on two copies
// of DB_FILE, one with the triggers and one with them dropped; alternated rounds, process CPU per
// claim and delete, medians. DB_FILE: a database migrated to 0015 (bench/cloud.ts prepareDb).
//   npx tsx bench/usage-change-triggers.ts DB_FILE
import Database from 'libsql';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const src = process.argv[2]!;
const dirs: string[] = [];
const open = (drop: boolean) => {
  const dir = mkdtempSync(join(tmpdir(), 'trg-'));
  dirs.push(dir);
  const file = join(dir, 'p.db');
  copyFileSync(src, file);
  const db = new Database(file);
  db.exec('PRAGMA journal_mode=WAL');
  db.exec('PRAGMA synchronous=NORMAL');
  if (drop) for (const t of ['insert', 'update', 'delete']) db.exec(`DROP TRIGGER usage_change_allocation_${t}`);
  const ins = db.prepare('INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used) VALUES (?, ?, ?, ?)');
  const del = db.prepare('DELETE FROM allocations WHERE consumer_id = ?');
  let n = 0;
  return () => {
    n += 1;
    const rp = 1 + (n % 1000);
    const c = `trg-${n}`;
    db.exec('BEGIN IMMEDIATE');
    ins.run(rp, c, 0, 1);
    ins.run(rp, c, 2, 256);
    db.exec('COMMIT');
    db.exec('BEGIN IMMEDIATE');
    del.run(c);
    db.exec('COMMIT');
  };
};
const claimWithTriggers = open(false);
const claimWithout = open(true);
const cpu = (f: () => void, n: number) => {
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) f();
  const u = process.cpuUsage(t);
  return (u.user + u.system) / n;
};
cpu(claimWithTriggers, 500);
cpu(claimWithout, 500);
const withTriggers: number[] = [];
const without: number[] = [];
for (let r = 0; r < 8; r++) {
  withTriggers.push(cpu(claimWithTriggers, 2000));
  without.push(cpu(claimWithout, 2000));
}
const med = (x: number[]) => [...x].sort((p, q) => p - q)[x.length >> 1]!;
console.log(
  JSON.stringify({
    us_per_claim_and_delete_with_triggers: med(withTriggers).toFixed(1),
    without: med(without).toFixed(1),
    added_us: (med(withTriggers) - med(without)).toFixed(1),
    rounds_with: withTriggers.map((x) => x.toFixed(1)),
    rounds_without: without.map((x) => x.toFixed(1)),
  }),
);
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
