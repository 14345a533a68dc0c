// placement-admin's data commands (import, verify, ...) run in this process,
// their output captured, as the bin would run them against an in-process target.
import { isDataCommand, runDataCommand } from '../../src/admin/cli.js';
import { openInProcessTarget } from '../../src/entry/admin-target.js';

export async function admin(args: string[], env: Record<string, string>): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const [command, ...rest] = args;
  if (!isDataCommand(command)) throw new Error(`not a data command: ${command}`);
  const code = await runDataCommand(command, rest, {
    out: (t) => {
      out += `${t}\n`;
    },
    err: (t) => {
      err += `${t}\n`;
    },
    env,
    openTarget: openInProcessTarget,
  });
  return { code, out, err };
}
