// Reading Keystone's unified limits (extension, docs/limits.md): what a start or a
// refresh words when they cannot be read (the errors below) and the role the
// service user needs. The reader itself (./http/keystone-limits.ts)
// asks Keystone through the service's one Keystone client (src/http/keystone/),
// which this domain folder may not import; extension.ts hands it to the limits.

/** The role assignment the service user needs, as oslo.limit documents it. */
export const READER_ROLE_COMMAND = (user: string, domain: string) =>
  `openstack role add --user ${user} --user-domain ${domain} --system all reader`;

/** Keystone will not let the service user read the limits: a start refuses, naming the role. */
export class LimitsAccessRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LimitsAccessRefused';
  }
}

/** The limits cannot be read as configured (no such service, a name repeated across regions): a start refuses. */
export class LimitsMisconfigured extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'LimitsMisconfigured';
  }
}

/** Keystone did not answer (down, timeout, 5xx): the last limits stay in force. */
export class LimitsUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LimitsUnavailable';
  }
}
