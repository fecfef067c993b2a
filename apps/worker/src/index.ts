export { toolNamesFor } from './attempt/prepare.js';
export type { WorkerConfig } from './config.js';
export { loadWorkerConfig } from './config.js';
export type { WorkerErrorCode } from './errors.js';
export { WORKER_ERRORS } from './errors.js';
export type { ActiveRuns, ProcessorDeps, StopReason } from './processor.js';
export { createProcessor } from './processor.js';
export type { TetherWorker } from './worker.js';
export { startWorker } from './worker.js';
