export { FLUSH_TRACES_MS, flushTraces } from './flush-traces.js';
export type { MetricsServer } from './metrics-server.js';
export { MetricsPortInUseError, serveMetrics } from './metrics-server.js';
export type { ElectedQueueCountsOptions } from './queue-counts.js';
export { ElectedQueueCounts, JOB_STATES, queueJobsGauge } from './queue-counts.js';
export { RunEndMetrics } from './run-metrics.js';
