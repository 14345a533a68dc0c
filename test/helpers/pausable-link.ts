// A TCP relay whose traffic can be held: put between a sqld replica and its
// primary's gRPC port, holding it makes the replica lag (it keeps answering
// reads from what it has, and applies nothing new) until the link resumes.
// For a replica, hold only what the primary sends (`{ only: 'answers' }`): with
// its own requests held too, a sqld replica on a loaded machine stopped answering
// SQL at all (past 30 s, three runs in three at load ~9), so a test could no longer
// see it lag; holding only the primary's side it lags and answers (five runs in five).
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface PausableLink {
  /** Where the replica should connect (`--primary-grpc-url`). */
  url: string;
  hold(): void;
  resume(): void;
  stop(): void;
}

export async function startPausableLink(target: string, opts: { only?: 'answers' } = {}): Promise<PausableLink> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  /** Bytes held back while the link is held, with where they go, in arrival order. */
  let waiting: [Socket, Buffer][] = [];
  let held = false;
  const relay = (from: Socket, to: Socket, holdable: boolean) => {
    sockets.add(from);
    from.on('data', (chunk: Buffer) => (held && holdable ? waiting.push([to, chunk]) : to.write(chunk)));
    from.on('close', () => {
      sockets.delete(from);
      to.destroy();
    });
    from.on('error', () => from.destroy());
  };
  const server: Server = createServer((inbound) => {
    const outbound = connect(Number(upstream.port), upstream.hostname);
    relay(inbound, outbound, opts.only !== 'answers');
    relay(outbound, inbound, true);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('link has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    hold() {
      held = true;
    },
    resume() {
      held = false;
      const queued = waiting;
      waiting = [];
      for (const [to, chunk] of queued) if (!to.destroyed) to.write(chunk);
    },
    stop() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/**
 * Holds and resumes `link` over HTTP (POST /hold, POST /resume), for tests
 * that run where the link's process is not (inside workerd).
 */
export async function startLinkControl(link: PausableLink): Promise<{ url: string; stop(): void }> {
  const server = createHttpServer((req, res) => {
    if (req.method === 'POST' && req.url === '/hold') link.hold();
    else if (req.method === 'POST' && req.url === '/resume') link.resume();
    else return res.writeHead(404).end();
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('link control has no port');
  return { url: `http://127.0.0.1:${address.port}`, stop: () => server.close() };
}
