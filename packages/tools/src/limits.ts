import { ToolError } from './errors.js';

/** Every bound the built-in tools enforce. All values are integers. */
export interface ToolLimits {
  /** Default `bash` timeout when the call gives none. */
  bashTimeoutMs: number;
  /** Hard maximum `bash` timeout; a larger requested timeout is lowered to it. */
  bashMaxTimeoutMs: number;
  /** Bytes of combined stdout+stderr kept for the model (half head, half tail). */
  bashOutputBytes: number;
  /** Bytes of live output streamed as `tool.output` events per call; the rest is not streamed. */
  bashStreamBytes: number;
  /** `RLIMIT_FSIZE`: largest file a command may write, in bytes. */
  bashFileSizeBytes: number;
  /** `RLIMIT_CPU`: CPU seconds per process. */
  bashCpuSeconds: number;
  /** `RLIMIT_NOFILE`: open files per process. */
  bashOpenFiles: number;
  /** Size of the private `/tmp` tmpfs under bwrap, in bytes (it counts toward `bashMemoryBytes`). */
  bashTmpBytes: number;
  /** Processes and threads of one command alive at once (its cgroup's `pids.max`). */
  bashMaxProcesses: number;
  /** Memory of one command, its private `/tmp` included (its cgroup's memory limit), in bytes. */
  bashMemoryBytes: number;
  /** Bytes of numbered file text one `read_file` call returns. */
  readFileMaxBytes: number;
  /** Lines `read_file` returns when the call gives no `limit`. */
  readFileDefaultLines: number;
  /** Characters of one line `read_file` shows before cutting it. */
  readFileMaxLineChars: number;
  /** Largest content `write_file` accepts, in UTF-8 bytes. */
  writeFileMaxBytes: number;
  /** Largest file `patch` edits, in bytes. */
  patchMaxFileBytes: number;
  /** Lines of unified diff `patch` shows. */
  patchDiffMaxLines: number;
  /** Entries `list_dir` prints before stopping. */
  listDirMaxEntries: number;
  /** Depth `list_dir` uses when the call gives none. */
  listDirDefaultDepth: number;
  /** Largest depth `list_dir` accepts; a larger requested depth is lowered to it. */
  listDirMaxDepth: number;
}

/** The defaults, used for every limit a run does not override. */
export const DEFAULT_TOOL_LIMITS: Readonly<ToolLimits> = Object.freeze({
  bashTimeoutMs: 120_000,
  bashMaxTimeoutMs: 30 * 60_000,
  bashOutputBytes: 30_000,
  bashStreamBytes: 1024 * 1024,
  bashFileSizeBytes: 1024 * 1024 * 1024,
  bashCpuSeconds: 30 * 60,
  bashOpenFiles: 1024,
  bashTmpBytes: 256 * 1024 * 1024,
  bashMaxProcesses: 256,
  bashMemoryBytes: 1024 * 1024 * 1024,
  readFileMaxBytes: 100_000,
  readFileDefaultLines: 2000,
  readFileMaxLineChars: 2000,
  writeFileMaxBytes: 10 * 1024 * 1024,
  patchMaxFileBytes: 10 * 1024 * 1024,
  patchDiffMaxLines: 80,
  listDirMaxEntries: 500,
  listDirDefaultDepth: 2,
  listDirMaxDepth: 10,
});

/** Smallest accepted value of each limit. */
const MINIMUMS: Readonly<ToolLimits> = {
  bashTimeoutMs: 100,
  bashMaxTimeoutMs: 100,
  bashOutputBytes: 256,
  bashStreamBytes: 0,
  bashFileSizeBytes: 1024,
  bashCpuSeconds: 1,
  bashOpenFiles: 16,
  bashTmpBytes: 1024 * 1024,
  bashMaxProcesses: 8,
  bashMemoryBytes: 16 * 1024 * 1024,
  readFileMaxBytes: 1024,
  readFileDefaultLines: 1,
  readFileMaxLineChars: 80,
  writeFileMaxBytes: 1,
  patchMaxFileBytes: 1,
  patchDiffMaxLines: 4,
  listDirMaxEntries: 1,
  listDirDefaultDepth: 1,
  listDirMaxDepth: 1,
};

/**
 * Merges `overrides` over {@link DEFAULT_TOOL_LIMITS} and validates the result.
 * @throws ToolError `ERR_TOOL_INVALID_CONTEXT` naming the field and the bound.
 */
export function resolveLimits(overrides: Partial<ToolLimits> = {}): Readonly<ToolLimits> {
  for (const key of Object.keys(overrides)) {
    if (!Object.hasOwn(DEFAULT_TOOL_LIMITS, key)) {
      throw new ToolError('ERR_TOOL_INVALID_CONTEXT', `limits.${key} is not a known tool limit`);
    }
  }
  const limits: ToolLimits = { ...DEFAULT_TOOL_LIMITS };
  for (const [key, value] of Object.entries(overrides) as [keyof ToolLimits, number | undefined][]) {
    if (value !== undefined) limits[key] = value;
  }
  for (const key of Object.keys(limits) as (keyof ToolLimits)[]) {
    const value = limits[key];
    if (!Number.isSafeInteger(value) || value < MINIMUMS[key]) {
      throw new ToolError(
        'ERR_TOOL_INVALID_CONTEXT',
        `limits.${key} must be an integer >= ${MINIMUMS[key]} (got ${String(value)})`,
      );
    }
  }
  if (limits.bashTimeoutMs > limits.bashMaxTimeoutMs) {
    throw new ToolError(
      'ERR_TOOL_INVALID_CONTEXT',
      `limits.bashTimeoutMs (${limits.bashTimeoutMs}) must be <= limits.bashMaxTimeoutMs (${limits.bashMaxTimeoutMs})`,
    );
  }
  if (limits.listDirDefaultDepth > limits.listDirMaxDepth) {
    throw new ToolError(
      'ERR_TOOL_INVALID_CONTEXT',
      `limits.listDirDefaultDepth (${limits.listDirDefaultDepth}) must be <= limits.listDirMaxDepth (${limits.listDirMaxDepth})`,
    );
  }
  return Object.freeze(limits);
}
