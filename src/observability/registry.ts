// A small metrics registry (counters, gauges, histograms) and the Prometheus
// text exposition format (version 0.0.4), with no dependency: the same code
// runs in Node and in a Worker isolate. A registry's state can be taken as a
// plain-JSON snapshot, several snapshots merged (the server processes of a
// Node cluster, summed), and a snapshot rendered as text.
//
// Series are keyed by their label values, in the order the family declares
// its label names; a hot path keeps the child it observes (labels()) or pays
// one string join and one Map lookup per observation.

export type MetricType = 'counter' | 'gauge' | 'histogram';

/** How a gauge combines across processes: summed (requests in flight) or the largest (a per-process copy of one cache). */
export type GaugeMerge = 'sum' | 'max';

export interface SeriesSnapshot {
  labels: string[];
  /** Counter and gauge value. */
  value?: number;
  /** Histogram: per-bucket counts (not cumulative), one more than `buckets` for +Inf. */
  counts?: number[];
  sum?: number;
}

export interface FamilySnapshot {
  name: string;
  help: string;
  type: MetricType;
  labelNames: string[];
  buckets?: number[];
  merge?: GaugeMerge;
  series: SeriesSnapshot[];
}

const SEPARATOR = '\u0000';

abstract class Family<Child> {
  protected readonly children = new Map<string, Child>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name)) throw new Error(`metric name ${name} is not valid`);
  }

  protected abstract create(): Child;

  /** The series for these label values (in labelNames' order), created on first use. */
  labels(...values: string[]): Child {
    const key = values.length === 1 ? values[0]! : values.join(SEPARATOR);
    let child = this.children.get(key);
    if (child === undefined) {
      if (values.length !== this.labelNames.length) {
        throw new Error(`${this.name} takes ${this.labelNames.length} label values, got ${values.length}`);
      }
      child = this.create();
      this.children.set(key, child);
    }
    return child;
  }

  protected entries(): [string[], Child][] {
    return [...this.children].map(([key, child]) => [this.labelNames.length === 0 ? [] : key.split(SEPARATOR), child]);
  }

  abstract snapshot(): FamilySnapshot;
}

export class CounterChild {
  value = 0;
  inc(by = 1): void {
    this.value += by;
  }
}

export class Counter extends Family<CounterChild> {
  protected create() {
    return new CounterChild();
  }
  /** Adds to the series with these label values. */
  inc(values: string[] = [], by = 1): void {
    this.labels(...values).inc(by);
  }
  snapshot(): FamilySnapshot {
    return {
      name: this.name,
      help: this.help,
      type: 'counter',
      labelNames: [...this.labelNames],
      series: this.entries().map(([labels, child]) => ({ labels, value: child.value })),
    };
  }
}

export class GaugeChild {
  value = 0;
  set(value: number): void {
    this.value = value;
  }
  inc(by = 1): void {
    this.value += by;
  }
  dec(by = 1): void {
    this.value -= by;
  }
}

export class Gauge extends Family<GaugeChild> {
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly merge: GaugeMerge = 'sum',
  ) {
    super(name, help, labelNames);
  }
  protected create() {
    return new GaugeChild();
  }
  set(values: string[], value: number): void {
    this.labels(...values).set(value);
  }
  snapshot(): FamilySnapshot {
    return {
      name: this.name,
      help: this.help,
      type: 'gauge',
      labelNames: [...this.labelNames],
      merge: this.merge,
      series: this.entries().map(([labels, child]) => ({ labels, value: child.value })),
    };
  }
}

export class HistogramChild {
  readonly counts: number[];
  sum = 0;
  constructor(private readonly buckets: readonly number[]) {
    this.counts = new Array<number>(buckets.length + 1).fill(0);
  }
  observe(value: number): void {
    const buckets = this.buckets;
    let i = 0;
    while (i < buckets.length && value > buckets[i]!) i += 1;
    this.counts[i]! += 1;
    this.sum += value;
  }
}

export class Histogram extends Family<HistogramChild> {
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly buckets: readonly number[],
  ) {
    super(name, help, labelNames);
    for (let i = 1; i < buckets.length; i += 1) if (!(buckets[i]! > buckets[i - 1]!)) throw new Error(`${name}: buckets must increase`);
  }
  protected create() {
    return new HistogramChild(this.buckets);
  }
  observe(values: string[], value: number): void {
    this.labels(...values).observe(value);
  }
  snapshot(): FamilySnapshot {
    return {
      name: this.name,
      help: this.help,
      type: 'histogram',
      labelNames: [...this.labelNames],
      buckets: [...this.buckets],
      series: this.entries().map(([labels, child]) => ({ labels, counts: [...child.counts], sum: child.sum })),
    };
  }
}

type AnyFamily = Counter | Gauge | Histogram;

export class Registry {
  private readonly families: AnyFamily[] = [];
  private readonly collectors: (() => void)[] = [];

  private add<F extends AnyFamily>(family: F): F {
    if (this.families.some((f) => f.name === family.name)) throw new Error(`metric ${family.name} is registered twice`);
    this.families.push(family);
    return family;
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.add(new Counter(name, help, labelNames));
  }

  gauge(name: string, help: string, labelNames: readonly string[] = [], merge: GaugeMerge = 'sum'): Gauge {
    return this.add(new Gauge(name, help, labelNames, merge));
  }

  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): Histogram {
    return this.add(new Histogram(name, help, labelNames, buckets));
  }

  /** Runs `collect` before every snapshot: for gauges read when scraped (memory), not kept current. */
  onSnapshot(collect: () => void): void {
    this.collectors.push(collect);
  }

  /** Whether a family of this name is registered. */
  has(name: string): boolean {
    return this.families.some((f) => f.name === name);
  }

  snapshot(): FamilySnapshot[] {
    for (const collect of this.collectors) collect();
    return this.families.map((f) => f.snapshot());
  }
}

/** Snapshots of several processes' registries as one: counters and histograms summed, gauges by their merge rule. */
export function mergeSnapshots(snapshots: FamilySnapshot[][]): FamilySnapshot[] {
  const byName = new Map<string, { family: FamilySnapshot; series: Map<string, SeriesSnapshot> }>();
  for (const snapshot of snapshots) {
    for (const family of snapshot) {
      let merged = byName.get(family.name);
      if (!merged) {
        merged = { family: { ...family, series: [] }, series: new Map() };
        byName.set(family.name, merged);
      }
      for (const s of family.series) {
        const key = s.labels.join(SEPARATOR);
        const seen = merged.series.get(key);
        if (!seen) {
          merged.series.set(key, { labels: s.labels, value: s.value, counts: s.counts && [...s.counts], sum: s.sum });
        } else if (family.type === 'histogram') {
          s.counts?.forEach((n, i) => {
            seen.counts![i] = (seen.counts![i] ?? 0) + n;
          });
          seen.sum = (seen.sum ?? 0) + (s.sum ?? 0);
        } else if (family.type === 'gauge' && family.merge === 'max') {
          seen.value = Math.max(seen.value ?? 0, s.value ?? 0);
        } else {
          seen.value = (seen.value ?? 0) + (s.value ?? 0);
        }
      }
    }
  }
  return [...byName.values()].map(({ family, series }) => ({ ...family, series: [...series.values()] }));
}

const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const escapeHelp = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

/** A sample value as Prometheus writes it. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

function labelSet(names: readonly string[], values: readonly string[], extra?: [string, string]): string {
  const parts = names.map((name, i) => `${name}="${escapeLabel(values[i] ?? '')}"`);
  if (extra) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

/** The text exposition of `families` (text/plain; version=0.0.4). Families without series print their HELP and TYPE only. */
export function renderText(families: FamilySnapshot[]): string {
  const lines: string[] = [];
  for (const family of families) {
    const { name, labelNames } = family;
    lines.push(`# HELP ${name} ${escapeHelp(family.help)}`, `# TYPE ${name} ${family.type}`);
    for (const s of family.series) {
      if (family.type !== 'histogram') {
        lines.push(`${name}${labelSet(labelNames, s.labels)} ${formatValue(s.value ?? 0)}`);
        continue;
      }
      const buckets = family.buckets ?? [];
      const counts = s.counts ?? [];
      let cumulative = 0;
      buckets.forEach((upper, i) => {
        cumulative += counts[i] ?? 0;
        lines.push(`${name}_bucket${labelSet(labelNames, s.labels, ['le', formatValue(upper)])} ${cumulative}`);
      });
      cumulative += counts[buckets.length] ?? 0;
      lines.push(`${name}_bucket${labelSet(labelNames, s.labels, ['le', '+Inf'])} ${cumulative}`);
      lines.push(`${name}_sum${labelSet(labelNames, s.labels)} ${formatValue(s.sum ?? 0)}`);
      lines.push(`${name}_count${labelSet(labelNames, s.labels)} ${cumulative}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
