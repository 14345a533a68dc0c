// The service's own metrics, one set per app (compose.ts builds it; one app per
// process, or per Worker isolate, in production): the HTTP layer, the
// database store, the candidates engine, the write model and the bind jobs
// all count into it. Names and labels of the HTTP and database metrics follow
// OpenTelemetry's semantic conventions (http.server.request.duration,
// http.server.active_requests, db.client.operation.duration), written as
// Prometheus names. docs/monitoring.md lists every metric.
import { Registry } from './registry.js';

/**
 * OpenTelemetry's default buckets for http.server.request.duration (5 ms to
 * 10 s, every bound kept so queries written for them still work), with bounds
 * at most a third apart from 1 to 50 ms: a warm candidates answer takes a few
 * milliseconds, and histogram_quantile() reads a median or a p95 only as
 * finely as the bucket it falls in (under 5 ms, OpenTelemetry's own say nothing).
 */
export const HTTP_BUCKETS = [
  0.001, 0.00125, 0.0015, 0.002, 0.0025, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1,
  0.15, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
];
/** One batch is one round trip: from tens of microseconds (embedded file) to a network hop (libSQL server). */
const DB_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SEARCH_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const CANDIDATE_COUNT_BUCKETS = [0, 1, 5, 10, 50, 100, 500, 1000, 5000, 10000, 50000];
const BIND_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600];

export function createServiceMetrics() {
  const registry = new Registry();
  return {
    registry,
    httpDuration: registry.histogram(
      'http_server_request_duration_seconds',
      'Duration of HTTP server requests, from the request reaching the app to its answer.',
      ['http_request_method', 'http_route', 'http_response_status_code'],
      HTTP_BUCKETS,
    ),
    httpActive: registry.gauge('http_server_active_requests', 'Number of HTTP server requests in flight.', ['http_request_method']),
    dbDuration: registry.histogram(
      'db_client_operation_duration_seconds',
      'Duration of database operations: one read batch, one write batch (one round trip each) or one interactive transaction.',
      ['db_system_name', 'db_operation_name'],
      DB_BUCKETS,
    ),
    replicaReads: registry.counter(
      'placement_db_replica_reads_total',
      'Reads that may come from the read replica (PLACEMENT_DB_READ_URL), by who answered: replica; or the primary, because the replica had not caught up with the writes of this instance (behind) or failed, timed out or rests after a failure (unavailable).',
      ['outcome'],
    ),
    databaseDeadlines: registry.counter(
      'placement_db_deadline_requests_total',
      'Requests answered 503 because a database call was given up at its deadline (PLACEMENT_DB_READ_TIMEOUT_MS, PLACEMENT_DB_WRITE_TIMEOUT_MS), by operation (read, write) and what is known of the write: not_written, or unknown (sent, not answered).',
      ['operation', 'outcome'],
    ),
    candidatesDuration: registry.histogram(
      'placement_allocation_candidates_search_duration_seconds',
      'Time GET /allocation_candidates spent finding its candidates (research, search), per answer.',
      [],
      SEARCH_BUCKETS,
    ),
    candidatesReturned: registry.histogram(
      'placement_allocation_candidates_returned',
      'Allocation requests in each GET /allocation_candidates answer.',
      [],
      CANDIDATE_COUNT_BUCKETS,
    ),
    candidatesCut: registry.counter(
      'placement_allocation_candidates_cut_total',
      'Allocation candidate answers cut short: by the cap (PLACEMENT_MAX_ALLOCATION_CANDIDATES) or the time budget (PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS).',
      ['reason'],
    ),
    writeRetries: registry.counter(
      'placement_write_retries_total',
      'Writes decided again after another writer changed what they read (a lost race), by the table of the statement that lost.',
      ['kind'],
    ),
    writeConflicts: registry.counter(
      'placement_write_conflicts_total',
      'Requests answered 409 Conflict, by the error code of the answer (placement.concurrent_update: a stale generation or retries exhausted).',
      ['kind'],
    ),
    capacityRefusals: registry.counter(
      'placement_capacity_refusals_total',
      'Allocation claims refused because they would exceed a provider capacity, by resource class.',
      ['resource_class'],
    ),
    limitRefusals: registry.counter(
      'placement_limit_refusals_total',
      "Allocation claims refused because they would raise a project's usage of a resource class over its limit (extension: project limits), by resource class.",
      ['resource_class'],
    ),
    bindDuration: registry.histogram(
      'cyborg_arq_bind_duration_seconds',
      'Time from an accelerator request entering BindStarted to its bind outcome (Bound or BindFailed).',
      ['outcome'],
      BIND_BUCKETS,
    ),
    treeCacheProviders: registry.gauge(
      'placement_tree_cache_providers',
      'Providers held in the allocation-candidates tree cache (each server process keeps its own copy: the largest is shown).',
      [],
      'max',
    ),
    leaseSweepRuns: registry.counter(
      'placement_lease_sweep_runs_total',
      'Lease sweeps run (extension: allocation leases), by outcome: ok, or failed (the next sweep retries).',
      ['outcome'],
    ),
    leaseSweepReleased: registry.counter(
      'placement_lease_sweep_released_total',
      'Consumers whose expired, unconfirmed lease the sweep released: their allocations removed as DELETE /allocations/{consumer} removes them.',
    ),
    leaseSweepDropped: registry.counter(
      'placement_lease_sweep_dropped_total',
      'Expired leases the sweep let go without removing allocations, because their consumer was written after the lease was set.',
    ),
    keystoneSignInFailures: registry.counter(
      'placement_keystone_sign_in_failures_total',
      'Failed sign-ins of the service user to Keystone (PLACEMENT_AUTH_STRATEGY=keystone; without one, no token can be validated), by reason: refused (wrong PLACEMENT_KEYSTONE_* credentials) or unreachable (Keystone did not answer, or answered an error).',
      ['reason'],
    ),
    treeCacheRefreshes: registry.counter(
      'placement_tree_cache_refreshes_total',
      'Tree cache refreshes that re-read trees: full (a first load or a reload) or partial (only the trees that changed).',
      ['kind'],
    ),
  };
}

export type ServiceMetrics = ReturnType<typeof createServiceMetrics>;
