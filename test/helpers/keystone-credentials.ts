// The service's Keystone identity in tests, stated once: the user the fake
// Keystone (fake-keystone.ts) accepts and the real-Keystone tests create,
// its password credentials as the service's Keystone clients take them, its
// PLACEMENT_KEYSTONE_* variables, and the Nova identity built on them.
import type { PasswordCredentials } from '../../src/http/keystone/client.js';
import { KeystoneNovaIdentity, type NovaKeystoneSettings } from '../../src/http/keystone/nova-identity.js';

export interface KeystoneUser {
  username: string;
  password: string;
  /** Its project, in the Default domain. */
  project: string;
}

/** The service's own user: `placement` in project `service`. */
export const SERVICE_USER: KeystoneUser = { username: 'placement', password: 'placement-pw', project: 'service' };

/** A project's user in the real-Keystone tests: `alice`, a member and reader of project `tenant-a`. */
export const PROJECT_USER: KeystoneUser = { username: 'alice', password: 'alice-pw', project: 'tenant-a' };

/** `user`'s password credentials, user and project in the Default domain (`password` instead of its own: a refused sign-in). */
export function passwordCredentials(user: KeystoneUser = SERVICE_USER, password = user.password): PasswordCredentials {
  return { username: user.username, password, projectName: user.project, userDomainName: 'Default', projectDomainName: 'Default' };
}

/** PLACEMENT_AUTH_STRATEGY=keystone and the PLACEMENT_KEYSTONE_* of `user` at `authUrl`, then `extra`. */
export function keystoneEnv(
  authUrl: string,
  extra: Record<string, string> = {},
  user: KeystoneUser = SERVICE_USER,
): Record<string, string> {
  return {
    PLACEMENT_AUTH_STRATEGY: 'keystone',
    PLACEMENT_KEYSTONE_AUTH_URL: authUrl,
    PLACEMENT_KEYSTONE_USERNAME: user.username,
    PLACEMENT_KEYSTONE_PASSWORD: user.password,
    PLACEMENT_KEYSTONE_PROJECT_NAME: user.project,
    ...extra,
  };
}

/**
 * The service's identity towards Nova at `authUrl` (the service's own user
 * unless `credentials`), catalog interfaces internal then public, 1 s per
 * Keystone request unless `settings` say otherwise; `fetch` and `now` as
 * KeystoneNovaIdentity takes them (a fake Keystone's, a test clock).
 */
export function novaIdentity(
  authUrl: string,
  settings: Partial<Omit<NovaKeystoneSettings, 'authUrl'>> = {},
  fetch?: typeof globalThis.fetch,
  now?: () => number,
): KeystoneNovaIdentity {
  return new KeystoneNovaIdentity(
    { authUrl, credentials: passwordCredentials(), timeoutMs: 1000, interfaces: ['internal', 'public'], ...settings },
    fetch,
    now,
  );
}
