// Process entry of placement-admin: real stdout/stderr, and a y/N prompt
// before repairs when stdin is a terminal.
import { createInterface } from 'node:readline/promises';
import { DATA_USAGE, isDataCommand, runDataCommand } from '../admin/cli.js';
import { main } from '../diagnostics/admin-cli.js';

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

const io = {
  out: (text: string) => process.stdout.write(`${text}\n`),
  err: (text: string) => process.stderr.write(`${text}\n`),
};
const [command, ...args] = process.argv.slice(2);
// import, verify, backup, restore (src/admin/); the rest is the diagnostics CLI.
process.exitCode = isDataCommand(command)
  ? await runDataCommand(command, args, {
      ...io,
      // Loaded only for --verify: the whole app is not needed to import, back up or restore.
      openTarget: async (dbUrl, authToken) => (await import('./admin-target.js')).openInProcessTarget(dbUrl, authToken),
    })
  : await main(process.argv.slice(2), {
      ...io,
      confirm: process.stdin.isTTY ? confirm : undefined,
      dataUsage: DATA_USAGE,
      ...(await import('../extensions.js').then(({ EXTENSIONS }) => ({
        // What the shipped extensions add to the audit's report (its sections, titles and tables), and their commands.
        audits: EXTENSIONS.flatMap((e) => (e.audit ? [e.audit] : [])),
        commands: EXTENSIONS.flatMap((e) => e.admin ?? []),
      }))),
    });
