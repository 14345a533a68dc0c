// A small oslo.policy: parses check strings ("role:admin or rule:x",
// "project_id:%(project_id)s", "@", "!", not/and/or with parentheses) and
// evaluates them against the caller's credentials and a target.

export interface Credentials {
  userId: string | null;
  projectId: string | null;
  roles: string[];
  systemScope: string | null;
  /** Roles of a valid service token sent beside the user's (X-Service-Token); empty without one. */
  serviceRoles: string[];
  /** Keystone tokens: the domain a domain-scoped token is for, and the user's and project's domains. */
  domainId?: string | null;
  userDomainId?: string | null;
  projectDomainId?: string | null;
}

type Check =
  | { kind: 'const'; value: boolean }
  | { kind: 'not'; check: Check }
  | { kind: 'and' | 'or'; checks: Check[] }
  | { kind: 'match'; key: string; match: string };

export function parseCheckString(text: string): Check {
  // Tokenise as oslo.policy: split on whitespace, then peel parentheses off the
  // ends of each chunk, so "%(project_id)s" inside a check stays whole.
  const tokens: string[] = [];
  for (const chunk of text.split(/\s+/).filter(Boolean)) {
    let core = chunk;
    while (core.startsWith('(')) {
      tokens.push('(');
      core = core.slice(1);
    }
    let closing = 0;
    while (core.endsWith(')') && !/%\(\w+\)$/.test(core)) {
      closing++;
      core = core.slice(0, -1);
    }
    if (core) tokens.push(core);
    for (let i = 0; i < closing; i++) tokens.push(')');
  }
  let pos = 0;
  const peek = () => tokens[pos]?.toLowerCase();
  const parseOr = (): Check => {
    const checks = [parseAnd()];
    while (peek() === 'or') {
      pos++;
      checks.push(parseAnd());
    }
    return checks.length === 1 ? checks[0]! : { kind: 'or', checks };
  };
  const parseAnd = (): Check => {
    const checks = [parseNot()];
    while (peek() === 'and') {
      pos++;
      checks.push(parseNot());
    }
    return checks.length === 1 ? checks[0]! : { kind: 'and', checks };
  };
  const parseNot = (): Check => {
    if (peek() === 'not') {
      pos++;
      return { kind: 'not', check: parseNot() };
    }
    return parseAtom();
  };
  const parseAtom = (): Check => {
    const tok = tokens[pos++];
    if (tok === undefined) return { kind: 'const', value: false };
    if (tok === '(') {
      const inner = parseOr();
      if (tokens[pos] === ')') pos++;
      return inner;
    }
    if (tok === '@') return { kind: 'const', value: true };
    if (tok === '!') return { kind: 'const', value: false };
    const colon = tok.indexOf(':');
    if (colon < 0) return { kind: 'const', value: false };
    return { kind: 'match', key: tok.slice(0, colon), match: tok.slice(colon + 1) };
  };
  // An empty check string means "always allowed", as in oslo.policy.
  if (tokens.length === 0) return { kind: 'const', value: true };
  return parseOr();
}

export type Target = Record<string, string | null | undefined>;

export class PolicyEnforcer {
  private readonly parsed = new Map<string, Check>();

  constructor(rules: Record<string, string>) {
    for (const [name, text] of Object.entries(rules)) this.parsed.set(name, parseCheckString(text));
  }

  enforce(rule: string, creds: Credentials, target: Target): boolean {
    const check = this.parsed.get(rule);
    // Unknown rules deny: a typo in a route must not open it up.
    return check ? this.evaluate(check, creds, target, new Set([rule])) : false;
  }

  private evaluate(check: Check, creds: Credentials, target: Target, seen: Set<string>): boolean {
    switch (check.kind) {
      case 'const':
        return check.value;
      case 'not':
        return !this.evaluate(check.check, creds, target, seen);
      case 'and':
        return check.checks.every((c) => this.evaluate(c, creds, target, seen));
      case 'or':
        return check.checks.some((c) => this.evaluate(c, creds, target, seen));
      case 'match':
        return this.match(check.key, check.match, creds, target, seen);
    }
  }

  private match(key: string, match: string, creds: Credentials, target: Target, seen: Set<string>): boolean {
    if (key === 'rule') {
      const ref = this.parsed.get(match);
      if (!ref || seen.has(match)) return false;
      return this.evaluate(ref, creds, target, new Set([...seen, match]));
    }
    if (key === 'role') return creds.roles.some((r) => r.toLowerCase() === match.toLowerCase());
    // oslo.policy's credentials carry the service token's roles as a list.
    if (key === 'service_roles') return creds.serviceRoles.some((r) => r.toLowerCase() === match.toLowerCase());
    // "%(project_id)s" reads the target; a literal compares as is.
    const expected = match.replace(/^%\((\w+)\)s$/, (_, name: string) => String(target[name] ?? '\u0000none'));
    const credentialValue: Record<string, string | null> = {
      project_id: creds.projectId,
      user_id: creds.userId,
      system_scope: creds.systemScope,
      domain_id: creds.domainId ?? null,
      user_domain_id: creds.userDomainId ?? null,
      project_domain_id: creds.projectDomainId ?? null,
    };
    const actual = credentialValue[key];
    return actual != null && actual === expected;
  }
}
