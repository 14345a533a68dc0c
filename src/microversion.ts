// A microversion value ("1.39", "2.0"): parsed once, compared by the domain
// ("does this request's version have feature X?"). Negotiating it from the
// OpenStack-API-Version header is the HTTP edge's job (src/http/microversion.ts).
export class Microversion {
  constructor(
    readonly major: number,
    readonly minor: number,
  ) {}

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
