// The fake Keystone of test/helpers/fake-keystone.ts over HTTP, for the
// workerd tests: a real Keystone cannot run inside workerd, and what the
// Worker suite checks is its own fetch path and round-trip count. Test
// hooks: PUT /__users (token -> user), GET /__calls, PUT /__down, PUT /__catalog.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';
import { FakeKeystone, type FakeUser } from '../helpers/fake-keystone.js';

declare module 'vitest' {
  export interface ProvidedContext {
    keystoneUrl: string;
  }
}

let server: Server | undefined;

export async function setup(project: TestProject): Promise<void> {
  const ks = new FakeKeystone();
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString();
      const send = (status: number, json: unknown, headers: Record<string, string> = {}) =>
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(json));
      if (req.url === '/__users' && req.method === 'PUT') {
        for (const [token, user] of Object.entries(JSON.parse(body) as Record<string, FakeUser>)) ks.addUser(token, user);
        return send(200, {});
      }
      if (req.url === '/__calls') return send(200, ks.calls);
      if (req.url === '/__catalog' && req.method === 'PUT') {
        ks.catalog = JSON.parse(body) as FakeKeystone['catalog'];
        return send(200, {});
      }
      if (req.url === '/__down' && req.method === 'PUT') {
        ks.down = (JSON.parse(body) as { down: boolean }).down;
        return send(200, {});
      }
      if (ks.down) return send(503, { error: { code: 503, title: 'Service Unavailable' } });
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
      const answer = await ks.handle(
        new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: req.method === 'POST' ? body : undefined }),
      );
      const out: Record<string, string> = {};
      answer.headers.forEach((value, name) => {
        out[name] = value;
      });
      res.writeHead(answer.status, out).end(await answer.text());
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  project.provide('keystoneUrl', `http://127.0.0.1:${(server.address() as AddressInfo).port}/v3`);
}

export function teardown(): Promise<void> {
  return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
}
