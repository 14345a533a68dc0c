// Project names for the dashboard, where Keystone knows them: Placement keeps
// only project ids. Asked with the viewer's own token (as Horizon does), so
// the service user needs no extra role and a viewer sees only names Keystone
// lets them read. Never in the way: the page waits a bounded time, a slower
// answer still lands in the cache for the next refresh, and any failure leaves
// the ids as they are.
import * as z from 'zod';
import { v3Url } from './client.js';

export interface ProjectNameLookup {
  /** Names of the given project ids that Keystone could tell; missing ids are unknown. */
  names(projectIds: string[], viewerToken: string): Promise<Record<string, string>>;
}

const ProjectBody = z.object({ project: z.object({ id: z.string(), name: z.string() }) });

export interface ProjectNameOptions {
  authUrl: string;
  fetcher?: typeof fetch;
  /** How long a name (or Keystone's "no such project") is kept. */
  ttlMs?: number;
  /** The dashboard waits at most this long for names; the page shows ids for the rest. */
  waitMs?: number;
  /** One Keystone request's limit (PLACEMENT_KEYSTONE_TIMEOUT_MS); an answer after waitMs is kept for next time. */
  requestTimeoutMs?: number;
  /** Most names kept; the oldest go first. */
  maxEntries?: number;
  now?: () => number;
}

export class KeystoneProjectNames implements ProjectNameLookup {
  private readonly base: string;
  private readonly fetcher: typeof fetch;
  private readonly ttlMs: number;
  private readonly waitMs: number;
  private readonly requestTimeoutMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  /** id -> name (null: Keystone has no such project) and when it was learnt. */
  private readonly cache = new Map<string, { name: string | null; at: number }>();
  /** Lookups under way: a second page view joins them rather than asking again. */
  private readonly asking = new Map<string, Promise<void>>();

  constructor(options: ProjectNameOptions) {
    this.base = v3Url(options.authUrl);
    this.fetcher = options.fetcher ?? ((input, init) => fetch(input, init));
    this.ttlMs = options.ttlMs ?? 300_000;
    this.waitMs = options.waitMs ?? 2_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  async names(projectIds: string[], viewerToken: string): Promise<Record<string, string>> {
    const now = this.now();
    const missing = [...new Set(projectIds)].filter((id) => {
      const hit = this.cache.get(id);
      return !hit || now - hit.at > this.ttlMs;
    });
    if (missing.length > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waited = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.waitMs);
      });
      await Promise.race([Promise.all(missing.map((id) => this.ask(id, viewerToken))), waited]);
      clearTimeout(timer);
    }
    const out: Record<string, string> = {};
    for (const id of projectIds) {
      const name = this.cache.get(id)?.name;
      if (name) out[id] = name;
    }
    return out;
  }

  private ask(id: string, token: string): Promise<void> {
    let pending = this.asking.get(id);
    if (!pending) {
      pending = this.learn(id, token).finally(() => this.asking.delete(id));
      this.asking.set(id, pending);
    }
    return pending;
  }

  private async learn(id: string, token: string): Promise<void> {
    let res: Response;
    try {
      res = await this.fetcher(`${this.base}/projects/${encodeURIComponent(id)}`, {
        headers: { 'x-auth-token': token, accept: 'application/json' },
        signal: AbortSignal.timeout(this.requestTimeoutMs),
      });
    } catch {
      return; // Keystone slow or away: ask again next time.
    }
    if (res.status === 404) return this.remember(id, null);
    if (!res.ok) {
      // 401/403: this viewer may not read it; another might. Nothing is kept.
      await res.body?.cancel();
      return;
    }
    const parsed = ProjectBody.safeParse(await res.json().catch(() => undefined));
    if (parsed.success) this.remember(id, parsed.data.project.name);
  }

  private remember(id: string, name: string | null): void {
    this.cache.delete(id);
    this.cache.set(id, { name, at: this.now() });
    if (this.cache.size > this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
  }
}
