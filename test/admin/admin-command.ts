// placement-admin's data commands (import, verify, ...) run in this process,
// their output captured, as the bin would run them against an in-process target;
// and an in-process app served over real HTTP, as an import's source.
import { createServer, type Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';
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

/** Serves `app` on a free loopback port (real HTTP, in this process). */
export async function serve(app: { fetch: (request: Request) => Response | Promise<Response> }): Promise<{ url: string; server: Server }> {
  const server = createServer(getRequestListener(app.fetch));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return { url: `http://127.0.0.1:${address.port}`, server };
}
