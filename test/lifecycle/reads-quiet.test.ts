// The re-warm's turns (reads-quiet.ts) on a real HTTP server: none comes
// while a read is in flight, however long it takes; one comes once the reads
// pause; a write in flight holds none back (a load's writes are when the
// re-warm must run).
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReadsQuiet } from '../../src/entry/reads-quiet.js';
import { waitUntil } from '../helpers/wait.js';

const QUIET_MS = 30;
let server: Server;
let reads: ReadsQuiet;
/** Responses the server holds until the test answers them. */
const held: ServerResponse[] = [];

beforeEach(async () => {
  reads = new ReadsQuiet(QUIET_MS);
  server = createServer((req, res) => {
    reads.track(req, res);
    held.push(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterEach(async () => {
  for (const res of held.splice(0)) res.end();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Sends a request and resolves once the server holds it; `answered` resolves with its status. */
async function send(method: string): Promise<{ answered: Promise<number> }> {
  const before = held.length;
  const answered = new Promise<number>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, method, path: '/', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
  await waitUntil(`the server holding the ${method}`, () => held.length > before);
  return { answered };
}

/** A turn asked for now, and whether it came yet. */
function askTurn(): { came: () => boolean; done: Promise<void> } {
  let came = false;
  const done = reads.turn().then(() => {
    came = true;
  });
  return { came: () => came, done };
}

describe('ReadsQuiet', () => {
  it('gives no turn while a read is in flight, and one once the reads pause', async () => {
    const read = await send('GET');
    const turn = askTurn();
    // Many times the quiet time: the read is still in flight, so no turn, on any machine.
    await new Promise((resolve) => setTimeout(resolve, 10 * QUIET_MS));
    expect(turn.came()).toBe(false);
    held.shift()!.end();
    expect(await read.answered).toBe(200);
    await waitUntil('the turn after the read', turn.came);
  });

  it('holds no turn back for a write in flight', async () => {
    const write = await send('PUT');
    const turn = askTurn();
    await waitUntil('a turn beside the write', turn.came);
    held.shift()!.end();
    expect(await write.answered).toBe(200);
  });
});
