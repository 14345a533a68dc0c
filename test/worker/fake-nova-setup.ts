// A Node HTTP server playing Nova for the workerd tests. It refuses the
// first attempt of every event with 503 (so the queue's retry path runs),
// records accepted events, and lists them at GET /__calls for the test.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    novaUrl: string;
  }
}

interface NovaEvent {
  name: string;
  server_uuid: string;
  tag: string;
  status: string;
}

let server: Server | undefined;

export async function setup(project: TestProject): Promise<void> {
  const accepted: (NovaEvent & { token: string | undefined; microversion: string | undefined })[] = [];
  const attempts = new Map<string, number>();
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/__calls') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(accepted));
        return;
      }
      if (req.method !== 'POST' || req.url !== '/v2.1/os-server-external-events') {
        res.writeHead(404).end();
        return;
      }
      const { events } = JSON.parse(text) as { events: NovaEvent[] };
      const key = events.map((e) => e.tag).join(',');
      const n = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, n);
      if (n === 1) {
        res.writeHead(503).end('try later');
        return;
      }
      const token = req.headers['x-auth-token'] as string | undefined;
      const microversion = req.headers['x-openstack-nova-api-version'] as string | undefined;
      for (const e of events) accepted.push({ ...e, token, microversion });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ events: events.map((e) => ({ ...e, code: 200 })) }));
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  project.provide('novaUrl', `http://127.0.0.1:${port}`);
}

export function teardown(): Promise<void> {
  return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
}
