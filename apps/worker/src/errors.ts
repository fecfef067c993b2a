/** Every error code the worker itself gives a run, with a line for `docs/errors.md`. */
export const WORKER_ERRORS = {
  ERR_WORKER_SPEC_MISSING: 'The run record has no spec to run (it was written by an incompatible version).',
  ERR_WORKER_FILES: 'A submitted file path is not a relative path inside the workspace.',
  ERR_WORKER_FILE_WRITE:
    'A submitted file could not be written into the workspace (the message names the file and the cause).',
  ERR_WORKER_ATTEMPT_SETUP:
    'The attempt could not be set up (its tools or model provider refused the run); the message says why.',
  ERR_WORKER_SHUTDOWN: 'Internal: the worker is shutting down and stops the attempt at a checkpoint.',
  ERR_WORKER_GAVE_UP: 'BullMQ gave up on the run (it stalled too often, or its attempts ran out).',
  ERR_EVENT_LOG_WRITE:
    'An event could not be written to the run log; the attempt is retried from its checkpoint.',
} as const;

export type WorkerErrorCode = keyof typeof WORKER_ERRORS;
