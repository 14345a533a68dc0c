// The README's "Connect an OpenStack cloud" blocks, as the tests run them: each
// fenced block follows a `<!-- keystone-test: NAME -->` marker, and the
// install guide's placeholders (`controller`, `*_PASS`) are replaced by the
// test's own Keystone, server and passwords.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const README = join(import.meta.dirname, '..', '..', 'README.md');

export function readmeBlock(name: string): string {
  const text = readFileSync(README, 'utf8');
  const marker = `<!-- keystone-test: ${name} -->`;
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`README.md has no block marked ${marker}`);
  const match = /```[a-z]*\n([\s\S]*?)```/.exec(text.slice(at + marker.length));
  if (!match) throw new Error(`README.md: no fenced block after ${marker}`);
  return match[1]!;
}

/** Replaces each key of `values` (longest first) wherever it appears. */
export function substitute(text: string, values: Record<string, string>): string {
  let out = text;
  for (const key of Object.keys(values).sort((a, b) => b.length - a.length)) out = out.split(key).join(values[key]!);
  return out;
}

/** KEY=value lines (comments and blanks skipped). */
export function envLines(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m) env[m[1]!] = m[2]!.trim();
  }
  return env;
}
