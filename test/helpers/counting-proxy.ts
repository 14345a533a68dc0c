// An HTTP proxy in front of sqld that counts the database requests passing
// through it: in Worker mode each one is a network hop, so tests can assert
// how many a Placement request makes. GET /__hops returns the count since
// the last DELETE /__hops. `delayMs` holds each database request that long
// before forwarding it: a network hop to a distant primary (bench:edge).
// `hold` keeps every database request until release(): a replica that does
// not answer, for as long as a test needs, however slow the machine is.
import { createServer, request as httpRequest, type Server } from 'node:http';

export interface CountingProxy {
  url: string;
  /** Database requests held so far (only with `hold`), not yet sent on. */
  held(): number;
  /** Stops holding: sends every held request on. */
  release(): void;
  stop(): void;
}

export async function startCountingProxy(target: string, opts: { delayMs?: number; hold?: boolean } = {}): Promise<CountingProxy> {
  const upstream = new URL(target);
  let hops = 0;
  let holding = opts.hold === true;
  let waiting: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    if (req.url === '/__hops') {
      if (req.method === 'DELETE') hops = 0;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ hops }));
      return;
    }
    if (req.method === 'POST') hops += 1; // statements and batches; GETs are version probes
    const delay = req.method === 'POST' ? (opts.delayMs ?? 0) : 0;
    const body: Buffer[] = [];
    const send = (payload: Buffer) => {
      const forward = httpRequest(
        {
          hostname: upstream.hostname,
          port: upstream.port,
          path: req.url,
          method: req.method,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.writeHead(502).end());
      forward.end(payload);
    };
    req.on('data', (chunk: Buffer) => body.push(chunk));
    req.on('end', () => {
      const go = () => setTimeout(() => send(Buffer.concat(body)), delay);
      if (holding && req.method === 'POST') waiting.push(go);
      else go();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    held: () => waiting.length,
    release() {
      holding = false;
      const queued = waiting;
      waiting = [];
      for (const go of queued) go();
    },
    stop: () => server.close(),
  };
}
