// Microversion negotiation shared by both APIs (Placement "placement",
// Cyborg "accelerator"). Parsing follows microversion_parse: the last header
// entry for our service type wins, values are int.int, `latest` is the max.
export class Microversion {
  constructor(readonly major: number, readonly minor: number) {}

  static parse(text: string): Microversion | null {
    const m = /^\s*(\d+)\.(\d+)\s*$/.exec(text);
    return m ? new Microversion(Number(m[1]), Number(m[2])) : null;
  }

  compare(other: Microversion | string): number {
    const o = typeof other === 'string' ? known(other) : other;
    return this.major - o.major || this.minor - o.minor;
  }

  atLeast(v: string): boolean {
    return this.compare(v) >= 0;
  }

  toString(): string {
    return `${this.major}.${this.minor}`;
  }
}

/** Versions named in code (the MV table), parsed once: hot paths compare per item. */
const parsedConstants = new Map<string, Microversion>();
function known(text: string): Microversion {
  const cached = parsedConstants.get(text);
  if (cached) return cached;
  const v = Microversion.parse(text);
  if (!v) throw new Error(`not a microversion: ${text}`);
  parsedConstants.set(text, v);
  return v;
}

/**
 * The value this request asked for, for `serviceType`; undefined when no
 * entry names it. Repeated headers arrive comma-joined.
 */
export function requestedVersion(header: string | undefined, serviceType: string): string | undefined {
  if (!header) return undefined;
  let found: string | undefined;
  for (const entry of header.split(',')) {
    const [service, ...rest] = entry.trim().split(/\s+/);
    if (service && service.toLowerCase() === serviceType) found = rest.join(' ');
  }
  return found;
}

export type Negotiation =
  | { ok: true; version: Microversion }
  | { ok: false; reason: 'syntax' | 'range'; value: string };

export function negotiate(asked: string | undefined, min: string, max: string): Negotiation {
  const lo = Microversion.parse(min)!;
  const hi = Microversion.parse(max)!;
  if (asked === undefined) return { ok: true, version: lo };
  if (asked.trim().toLowerCase() === 'latest') return { ok: true, version: hi };
  const v = Microversion.parse(asked);
  if (!v) return { ok: false, reason: 'syntax', value: asked };
  if (v.compare(lo) < 0 || v.compare(hi) > 0) return { ok: false, reason: 'range', value: asked };
  return { ok: true, version: v };
}
