// Process entry of placement-admin: real stdout/stderr, and a y/N prompt
// before repairs when stdin is a terminal.
import { createInterface } from 'node:readline/promises';
import { main } from '../diagnostics/admin-cli.js';

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

process.exitCode = await main(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  confirm: process.stdin.isTTY ? confirm : undefined,
});
