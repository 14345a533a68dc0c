// The import's alternative to --token: a Keystone v3 password login (POST
// /v3/auth/tokens) with the PLACEMENT_KEYSTONE_* settings, giving a token
// (X-Subject-Token) and the catalog's placement endpoint. Deliberately small
// and self-contained: the service's own Keystone client can replace it.
import * as z from 'zod';
import { AdminError } from './placement-reader.js';

export interface KeystoneLogin {
  authUrl: string;
  username: string;
  password: string;
  projectName: string;
  userDomainName: string;
  projectDomainName: string;
  /** Which catalog endpoint to use (public by default, as the openstack CLI). */
  interface: string;
}

export interface KeystoneSession {
  token: string;
  /** The placement endpoint from the token's catalog, when it has one. */
  placementUrl?: string;
}

const Catalog = z.object({
  token: z.object({
    catalog: z
      .array(
        z.object({
          type: z.string(),
          endpoints: z.array(z.object({ interface: z.string(), url: z.string() })),
        }),
      )
      .optional(),
  }),
});

/** "http://host/identity" and "http://host/identity/v3" both mean the v3 API there. */
export const v3Url = (authUrl: string): string => {
  const trimmed = authUrl.replace(/\/+$/, '');
  return trimmed.endsWith('/v3') ? trimmed : `${trimmed}/v3`;
};

export async function keystonePasswordLogin(login: KeystoneLogin, doFetch: typeof fetch = fetch): Promise<KeystoneSession> {
  const url = `${v3Url(login.authUrl)}/auth/tokens`;
  const body = {
    auth: {
      identity: {
        methods: ['password'],
        password: { user: { name: login.username, domain: { name: login.userDomainName }, password: login.password } },
      },
      scope: { project: { name: login.projectName, domain: { name: login.projectDomainName } } },
    },
  };
  let res: Response;
  try {
    res = await doFetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    });
  } catch (err) {
    throw new AdminError(`cannot reach Keystone at ${url}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const text = await res.text();
  if (res.status === 401) throw new AdminError(`Keystone refused the login of ${login.username} (HTTP 401)`);
  const token = res.headers.get('x-subject-token');
  if (!res.ok || !token)
    throw new AdminError(`Keystone answered HTTP ${res.status} to the password login: ${text.replace(/\s+/g, ' ').slice(0, 160)}`);
  let catalog: z.infer<typeof Catalog> | undefined;
  try {
    const parsed = Catalog.safeParse(JSON.parse(text));
    if (parsed.success) catalog = parsed.data;
  } catch {
    /* no catalog to read */
  }
  const placement = catalog?.token.catalog?.find((service) => service.type === 'placement');
  const endpoint = placement?.endpoints.find((e) => e.interface === login.interface);
  return { token, ...(endpoint ? { placementUrl: endpoint.url.replace(/\/+$/, '') } : {}) };
}
