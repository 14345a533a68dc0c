// The database layer's reports (db/client.ts: DbObserver) as the service's metrics.
import type { DbObserver, DbOperation } from '../db/client.js';
import type { HistogramChild } from './registry.js';
import type { ServiceMetrics } from './service.js';

export function databaseObserver(metrics: ServiceMetrics): DbObserver {
  const children = new Map<DbOperation, HistogramChild>();
  return {
    operation(name, seconds) {
      let child = children.get(name);
      if (!child) children.set(name, (child = metrics.dbDuration.labels('sqlite', name)));
      child.observe(seconds);
    },
    raceLost(kind) {
      metrics.writeRetries.inc([kind]);
    },
    replicaRead(outcome) {
      metrics.replicaReads.inc([outcome]);
    },
  };
}
