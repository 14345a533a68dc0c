// What a Prometheus user reads from http_server_request_duration_seconds:
// histogram_quantile() over its buckets (linear within the bucket a quantile
// falls in). For answers of a millisecond to a tenth of a second, the median
// and the p95 it reads must be within 20% of the requests' own.
import { describe, expect, it } from 'vitest';
import { parseSamples } from '../helpers/prometheus-text.js';
import { renderText } from '../../src/observability/registry.js';
import { createServiceMetrics } from '../../src/observability/service.js';

/** Prometheus' histogram_quantile over one series' cumulative buckets. */
function histogramQuantile(q: number, buckets: { le: number; count: number }[]): number {
  const total = buckets.at(-1)!.count;
  const rank = q * total;
  let below = 0;
  let lower = 0;
  for (const { le, count } of buckets) {
    if (count >= rank) {
      if (le === Number.POSITIVE_INFINITY) return lower;
      return lower + ((le - lower) * (rank - below)) / (count - below);
    }
    below = count;
    lower = le;
  }
  return Number.NaN;
}

/** Deterministic log-normal durations (seconds) with this median and p95. */
function durations(medianS: number, p95S: number, n: number): number[] {
  let seed = 0x2545f491;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const sigma = Math.log(p95S / medianS) / 1.6449;
  return Array.from({ length: n }, () => {
    const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    return medianS * Math.exp(sigma * normal);
  });
}

const exact = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

describe('GET /metrics request durations', () => {
  const cases: [number, number][] = [];
  for (const medianMs of [1.2, 2, 3.7, 5.7, 9, 14, 26, 40, 75])
    for (const ratio of [1.2, 1.65, 2.3]) if (medianMs * ratio <= 100) cases.push([medianMs, medianMs * ratio]);

  it.each(cases)('reads a median of %s ms and a p95 of %s ms within 20%%', (medianMs, p95Ms) => {
    const metrics = createServiceMetrics();
    const values = durations(medianMs / 1000, p95Ms / 1000, 4000);
    const series = metrics.httpDuration.labels('GET', '/allocation_candidates', '200');
    for (const v of values) series.observe(v);
    const buckets = parseSamples(renderText(metrics.registry.snapshot()))
      .filter((s) => s.name === 'http_server_request_duration_seconds_bucket')
      .map((s) => ({ le: Number(s.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : s.labels.le), count: s.value }));
    const sorted = [...values].sort((a, b) => a - b);
    for (const q of [0.5, 0.95]) {
      const read = histogramQuantile(q, buckets);
      expect(Math.abs(read - exact(sorted, q)) / exact(sorted, q), `q=${q}: read ${read * 1000} ms`).toBeLessThanOrEqual(0.2);
    }
  });
});
