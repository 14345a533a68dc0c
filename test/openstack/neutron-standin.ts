// The Neutron stand-in of the OpenStack cloud (scripts/openstack-cloud.ts): an
// HTTP server on a free loopback port that answers Neutron's v2.0 API as a
// Neutron with no networks and no ports would. It stands for Neutron only as far
// as Nova needs one for servers booted with `--nic none`: Nova still lists the
// ports bound to a server (when it builds, moves, shelves and deletes it) and the
// API extensions, and gets empty lists. It checks no token, plugs no port, and
// creating anything is refused (409), so a server that asks for a network fails
// loudly instead of booting without one. docs/openstack.md says what it leaves
// unproven.
import { createServer, type Server } from 'node:http';

export interface NeutronStandIn {
  url: string;
  /** Every request it answered, as `METHOD /path?query` (for a failing test's message). */
  requests: string[];
  close(): Promise<void>;
}

const VERSIONS = {
  versions: [{ id: 'v2.0', status: 'CURRENT', links: [] }],
};

/** `/v2.0/ports` -> `ports`; `/v2.0/ports/ID` -> undefined (one thing, which never exists here). */
function collectionOf(path: string): string | undefined {
  const match = /^\/v2\.0\/([a-z0-9_-]+)(?:\.json)?$/.exec(path);
  return match?.[1]?.replaceAll('-', '_');
}

export async function startNeutronStandIn(port = 0): Promise<NeutronStandIn> {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://standin');
    requests.push(`${req.method} ${url.pathname}${url.search}`);
    req.resume();
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/' || url.pathname === '/v2.0' || url.pathname === '/v2.0/') return answer(200, VERSIONS);
    const collection = collectionOf(url.pathname);
    if (req.method === 'GET' && collection) return answer(200, { [collection]: [] });
    if (req.method === 'GET') {
      return answer(404, { NeutronError: { type: 'NotFound', message: `${url.pathname} not found (no such thing in the stand-in)` } });
    }
    answer(409, {
      NeutronError: {
        type: 'Conflict',
        message: `${req.method} ${url.pathname}: the Neutron stand-in has no networks; boot with --nic none`,
      },
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return {
    url: `http://127.0.0.1:${bound}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
