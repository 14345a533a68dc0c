// Reads Prometheus' text exposition format back into samples, and runs
// Debian's promtool on it, for the metrics tests.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) {
      labels[name!] = value!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3] === '+Inf' ? Number.POSITIVE_INFINITY : match[3]) });
  }
  return samples;
}

/** The value of the one sample named `name` whose labels include `labels`; undefined when none. */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

export const PROMTOOL = '/usr/bin/promtool';
export const PROMETHEUS = '/usr/bin/prometheus';
/** Why promtool / the Prometheus server cannot run here (for describeWithPart), or undefined when they can. */
export const PROMTOOL_MISSING = existsSync(PROMTOOL) ? undefined : `Debian package prometheus (${PROMTOOL} not found)`;
export const PROMETHEUS_MISSING = existsSync(PROMETHEUS) ? undefined : `Debian package prometheus (${PROMETHEUS} not found)`;

/** `promtool check metrics` on `text`: its exit status and the problems it lists. */
export function promtoolCheck(text: string): { status: number; problems: string[] } {
  const run = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  const problems = `${run.stdout}${run.stderr}`
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return { status: run.status ?? -1, problems };
}
