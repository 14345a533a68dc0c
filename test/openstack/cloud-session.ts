// What the files of test/openstack/ share: the cloud of scripts/openstack-cloud.ts, an
// openstacksdk session to drive it (sdk-session.py), and reads of the placement service's
// own REST API to check what Nova left there.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import type { Cloud } from '../../scripts/openstack-cloud.js';

const run = promisify(execFile);

export interface Server {
  id: string;
  name: string;
  status: string;
  task_state: string | null;
  compute_host: string | null;
  flavor: { vcpus: number; ram: number; disk: number; original_name: string };
  fault?: { message: string } | null;
}

export interface Service {
  id: string;
  host: string;
  binary: string;
  state: string;
  status: string;
  is_forced_down: boolean;
}

/** One Python process with an openstacksdk connection as the cloud admin (sdk-session.py). */
export class SdkSession {
  private child: ChildProcess;
  private answers: ((line: string) => void)[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  private stderr = '';

  constructor(env: Record<string, string>) {
    this.child = spawn('/usr/bin/python3', [join(import.meta.dirname, 'sdk-session.py')], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => this.answers.shift()?.(line));
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
  }

  /** One request, answered in order; a failure throws with the SDK's message. */
  request<T>(req: Record<string, unknown>): Promise<T> {
    const next = this.queue.then(
      () =>
        new Promise<T>((resolve, reject) => {
          if (this.child.exitCode !== null) return reject(new Error(`sdk-session.py exited:\n${this.stderr}`));
          this.answers.push((line) => {
            const answer = JSON.parse(line) as { result?: T; error?: string };
            if (answer.error !== undefined) reject(new Error(`${JSON.stringify(req)}: ${answer.error}`));
            else resolve(answer.result as T);
          });
          this.child.stdin!.write(`${JSON.stringify(req)}\n`);
        }),
    );
    this.queue = next.catch(() => {});
    return next;
  }

  compute<T>(method: string, args: unknown[] = [], kwargs: Record<string, unknown> = {}): Promise<T> {
    return this.request<T>({ op: 'compute', method, args, kwargs });
  }

  servers(): Promise<Server[]> {
    return this.compute<Server[]>('servers', [], { details: true, all_projects: true });
  }

  waitFor(server: string, status: string, timeout = 300): Promise<Server> {
    return this.request<Server>({ op: 'wait', server, status, timeout });
  }

  async waitActive(server: string, timeout = 300): Promise<Server> {
    const s = await this.waitFor(server, 'ACTIVE', timeout);
    if (s.status !== 'ACTIVE') throw new Error(`server ${s.name} is ${s.status}: ${s.fault?.message ?? ''}`);
    return s;
  }

  waitDeleted(server: string, timeout = 300): Promise<null> {
    return this.request<null>({ op: 'wait_delete', server, timeout });
  }

  async service(host: string, binary = 'nova-compute'): Promise<Service> {
    const services = await this.compute<Service[]>('services');
    const found = services.find((s) => s.host === host && s.binary === binary);
    if (!found) throw new Error(`no ${binary} on ${host} among ${services.map((s) => `${s.binary}@${s.host}`).join(', ')}`);
    return found;
  }

  async setEnabled(host: string, enabled: boolean): Promise<void> {
    const service = await this.service(host);
    if (enabled) await this.compute('enable_service', [service.id, host, 'nova-compute']);
    else await this.compute('disable_service', [service.id, host, 'nova-compute'], { disabled_reason: 'test/openstack' });
  }

  close(): void {
    this.child.stdin!.end();
    this.child.kill();
  }
}

type Resources = Record<string, number>;

/** Reads of the placement service's REST API (this service or Placement 8.0.0) as the cloud admin. */
export class PlacementReader {
  constructor(private cloud: Cloud) {}

  async get<T>(path: string): Promise<T> {
    const res = await fetch(`${this.cloud.placementUrl}${path}`, {
      headers: { 'x-auth-token': await this.cloud.keystone.adminToken(), 'openstack-api-version': 'placement 1.39' },
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }

  async providers(): Promise<{ uuid: string; name: string; parent_provider_uuid: string | null }[]> {
    return (
      await this.get<{ resource_providers: { uuid: string; name: string; parent_provider_uuid: string | null }[] }>('/resource_providers')
    ).resource_providers;
  }

  async providerUuid(name: string): Promise<string> {
    const found = (await this.providers()).find((p) => p.name === name);
    if (!found) throw new Error(`no resource provider named ${name}`);
    return found.uuid;
  }

  async allocations(consumer: string): Promise<Record<string, Resources>> {
    const body = await this.get<{ allocations: Record<string, { resources: Resources }> }>(`/allocations/${consumer}`);
    return Object.fromEntries(Object.entries(body.allocations).map(([rp, a]) => [rp, a.resources]));
  }

  async usages(provider: string): Promise<Resources> {
    return (await this.get<{ usages: Resources }>(`/resource_providers/${provider}/usages`)).usages;
  }

  async inventories(provider: string): Promise<Record<string, { total: number; reserved: number; allocation_ratio: number }>> {
    return (
      await this.get<{ inventories: Record<string, { total: number; reserved: number; allocation_ratio: number }> }>(
        `/resource_providers/${provider}/inventories`,
      )
    ).inventories;
  }

  async traits(provider: string): Promise<string[]> {
    return (await this.get<{ traits: string[] }>(`/resource_providers/${provider}/traits`)).traits;
  }
}

/** What a server of `flavor` holds in placement (Nova leaves out a zero disk). */
export function flavorResources(flavor: Server['flavor']): Resources {
  const r: Resources = { VCPU: flavor.vcpus, MEMORY_MB: flavor.ram };
  if (flavor.disk > 0) r.DISK_GB = flavor.disk;
  return r;
}

const nonZero = (r: Resources) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== 0));

/**
 * Every server's allocations are its flavor on its host's provider (none when it has no
 * host: shelved-offloaded, or never scheduled), and every provider's usage is the sum of
 * what is placed on it: nothing else (no migration's, no deleted server's) holds anything.
 * `extra` adds what other consumers are expected to hold per provider uuid (accelerators).
 */
export async function expectPlacementMatchesServers(
  sdk: SdkSession,
  placement: PlacementReader,
  extra: Record<string, Resources> = {},
): Promise<Server[]> {
  const servers = await sdk.servers();
  const providers = await placement.providers();
  const byName = new Map(providers.map((p) => [p.name, p.uuid]));
  const expectedUsage: Record<string, Resources> = {};
  const add = (rp: string, r: Resources) => {
    const u = (expectedUsage[rp] ??= {});
    for (const [rc, n] of Object.entries(r)) u[rc] = (u[rc] ?? 0) + n;
  };
  for (const [rp, r] of Object.entries(extra)) add(rp, r);
  const actual: Record<string, Record<string, Resources>> = {};
  const expected: Record<string, Record<string, Resources>> = {};
  for (const s of servers) {
    const label = `${s.name} (${s.status}${s.compute_host ? ` on ${s.compute_host}` : ''})`;
    actual[label] = await placement.allocations(s.id);
    const host = s.status === 'SHELVED_OFFLOADED' ? null : s.compute_host;
    if (host) {
      const rp = byName.get(host);
      if (!rp) throw new Error(`no provider for host ${host}`);
      const r = flavorResources(s.flavor);
      expected[label] = { [rp]: r };
      add(rp, r);
    } else {
      expected[label] = {};
    }
  }
  expect(actual).toEqual(expected);
  const usage: Record<string, Resources> = {};
  const want: Record<string, Resources> = {};
  for (const p of providers) {
    usage[p.name] = nonZero(await placement.usages(p.uuid));
    want[p.name] = expectedUsage[p.uuid] ?? {};
  }
  expect(usage).toEqual(want);
  return servers;
}

/** No provider holds more of a class than its capacity ((total - reserved) x allocation_ratio). */
export async function expectNoProviderOverCapacity(placement: PlacementReader): Promise<void> {
  for (const p of await placement.providers()) {
    const inventories = await placement.inventories(p.uuid);
    const usages = await placement.usages(p.uuid);
    for (const [rc, used] of Object.entries(usages)) {
      const inv = inventories[rc];
      if (!inv) {
        expect(used, `${p.name} uses ${rc} it has no inventory of`).toBe(0);
        continue;
      }
      expect(used, `${p.name} ${rc}`).toBeLessThanOrEqual(Math.floor((inv.total - inv.reserved) * inv.allocation_ratio));
    }
  }
}

/** Retries `check` (an expect-throwing function) until it passes or `timeoutMs` passes. */
export async function eventually<T>(check: () => Promise<T>, timeoutMs: number, intervalMs = 1000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** `openstack ARGS` as the cloud admin; resolves with stdout. */
export async function openstack(cloud: Cloud, args: string[]): Promise<string> {
  try {
    const { stdout } = await run('/usr/bin/openstack', args, { env: { ...process.env, ...cloud.adminEnv }, timeout: 300_000 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`openstack ${args.join(' ')}: ${e.message}\n${e.stderr ?? ''}${e.stdout ?? ''}`);
  }
}
