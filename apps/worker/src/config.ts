import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DEFAULT_SESSION_HISTORY_TOKENS, type ModelProfile, readProfilesFromEnv } from '@tether/agent';
import {
  type Env,
  EnvReader,
  readSecrets,
  readSharedConfig,
  type SecretBox,
  type SharedConfig,
} from '@tether/config';
import { SKILL_DEFAULTS } from '@tether/protocol';
import { SANDBOX_MODES, type SandboxMode } from '@tether/tools';

/** Everything the worker reads from its environment, parsed once and frozen. */
export interface WorkerConfig extends SharedConfig {
  workerId: string;
  concurrency: number;
  /** The queue shards this worker takes jobs from (`TETHER_WORKER_SHARDS`; default every shard). */
  shards: readonly number[];
  sandbox: SandboxMode;
  allowNetwork: boolean;
  /** The unprivileged host user bash commands run as when the worker is root. */
  sandboxUser: { uid: number; gid: number };
  /** Processes and threads one command may have at once (its cgroup). */
  sandboxMaxProcesses: number;
  /** Memory of one command, its /tmp included (its cgroup), in bytes. */
  sandboxMemoryBytes: number;
  /** BullMQ lock: how long a job stays ours without a renewal (ms). */
  lockDurationMs: number;
  /** How often workers look for jobs whose lock expired (ms). */
  stalledIntervalMs: number;
  /** How many times a run may be recovered from a dead worker before it fails. */
  maxStalledCount: number;
  /** On SIGTERM: how long active attempts get to reach a checkpoint before they are stopped (ms). */
  shutdownGraceMs: number;
  maxSteps: number;
  wallClockMs: number;
  /** How long a model profile that failed over to its fallbacks is skipped (`TETHER_MODEL_BREAKER_MS`). */
  modelBreakerMs: number;
  /** Tokens of a session's transcript a run of it sees as history (older turns are left out). */
  sessionHistoryTokens: number;
  /** The crew: tasks one delegation may hold (`TETHER_CREW_MAX_PARALLEL`). */
  crewMaxParallel: number;
  /** Children a run may start over its life (`TETHER_CREW_MAX_CHILDREN`). */
  crewMaxChildren: number;
  /** How deep a crew tree goes: a run at this depth cannot delegate (`TETHER_CREW_MAX_DEPTH`; 1: children cannot). */
  crewMaxDepth: number;
  /** How long a child may take, from its creation, before its parent ends it as timed out (ms). */
  crewChildTimeoutMs: number;
  /**
   * Runs of one tenant that may execute at once across every worker
   * (`TETHER_TENANT_MAX_RUNNING`); 0 for no cap. The others wait in the queue.
   */
  tenantMaxRunning: number;
  /** Characters of memory entries a run with the memory toolset sees in its system prompt (`TETHER_MEMORY_PROMPT_CHARS`; 0: none). */
  memoryPromptChars: number;
  /** Characters of the skills index in a run's system prompt (`TETHER_SKILLS_PROMPT_CHARS`). */
  skillsPromptChars: number;
  /** Where this worker writes out tenants' skills for bash (`TETHER_SKILLS_CACHE_DIR`): local, not shared. */
  skillsCacheDir: string;
  /** One MCP tool call, from request to result (`TETHER_MCP_CALL_TIMEOUT_MS`). */
  mcpCallTimeoutMs: number;
  /** Connecting to an MCP server and listing its tools (`TETHER_MCP_CONNECT_TIMEOUT_MS`). */
  mcpConnectTimeoutMs: number;
  /** Bytes of one MCP response (`TETHER_MCP_MAX_RESPONSE_BYTES`). */
  mcpMaxResponseBytes: number;
  /** How long this worker keeps a server's tool listing (`TETHER_MCP_LIST_TTL_MS`; 0: list at every start). */
  mcpListTtlMs: number;
  profiles: readonly ModelProfile[];
  defaultProfile: string | undefined;
  /** `TETHER_SECRETS_KEY`: opens what the API sealed (MCP server headers, webhook signing secrets); unset, neither can be used. */
  secrets: SecretBox | undefined;
  /** Endpoints this worker delivers to at once (`TETHER_WEBHOOK_CONCURRENCY`; 0: this worker delivers none). */
  webhookConcurrency: number;
  /** Attempts in flight at once to one endpoint (`TETHER_WEBHOOK_PER_ENDPOINT`). */
  webhookPerEndpoint: number;
  /** How often this worker looks for runs an API step left undispatched (`TETHER_WEBHOOK_SWEEP_MS`), and how old they must be. */
  webhookSweepMs: number;
  /** `TETHER_METRICS_PORT`: the port the worker serves `GET /metrics` on; undefined (unset): no metrics at all. */
  metricsPort: number | undefined;
}

/** Parses the worker's configuration; throws one error naming every bad variable. */
export function loadWorkerConfig(env: Env = process.env): Readonly<WorkerConfig> {
  const reader = new EnvReader(env);
  const shared = readSharedConfig(reader);
  const { profiles, defaultProfile } = readProfilesFromEnv(env, (problem) => reader.problem(problem));
  const config: WorkerConfig = {
    ...shared,
    // Opaque: it reaches clients in run.started, so it names no host and no pid.
    workerId: reader.string('TETHER_WORKER_ID', `wrk_${randomBytes(8).toString('hex')}`),
    concurrency: reader.integer('TETHER_WORKER_CONCURRENCY', 4, 1, 1_000),
    shards: readShards(reader, shared.queueShards),
    sandbox: reader.oneOf('TETHER_SANDBOX', 'auto', SANDBOX_MODES),
    allowNetwork: reader.boolean('TETHER_SANDBOX_NETWORK', false),
    sandboxUser: {
      uid: reader.integer('TETHER_SANDBOX_UID', 65_534, 1, 4_294_967_294),
      gid: reader.integer('TETHER_SANDBOX_GID', 65_534, 1, 4_294_967_294),
    },
    sandboxMaxProcesses: reader.integer('TETHER_SANDBOX_MAX_PROCESSES', 256, 8, 1_000_000),
    sandboxMemoryBytes: reader.integer('TETHER_SANDBOX_MEMORY_MB', 1024, 16, 1_048_576) * 1024 * 1024,
    lockDurationMs: reader.integer('TETHER_LOCK_DURATION_MS', 15_000, 1_000, 600_000),
    stalledIntervalMs: reader.integer('TETHER_STALLED_INTERVAL_MS', 5_000, 500, 600_000),
    maxStalledCount: reader.integer('TETHER_MAX_STALLED_COUNT', 5, 1, 1_000),
    shutdownGraceMs: reader.integer('TETHER_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    maxSteps: reader.integer('TETHER_MAX_STEPS', 50, 1, 1_000),
    wallClockMs: reader.integer('TETHER_WALL_CLOCK_MS', 30 * 60_000, 1_000, 7 * 24 * 3600 * 1000),
    modelBreakerMs: reader.integer('TETHER_MODEL_BREAKER_MS', 30_000, 0, 3_600_000),
    sessionHistoryTokens: reader.integer(
      'TETHER_SESSION_HISTORY_TOKENS',
      DEFAULT_SESSION_HISTORY_TOKENS,
      1_000,
      10_000_000,
    ),
    crewMaxParallel: reader.integer('TETHER_CREW_MAX_PARALLEL', 5, 1, 100),
    crewMaxChildren: reader.integer('TETHER_CREW_MAX_CHILDREN', 50, 1, 10_000),
    crewMaxDepth: reader.integer('TETHER_CREW_MAX_DEPTH', 1, 1, 10),
    crewChildTimeoutMs: reader.integer(
      'TETHER_CREW_CHILD_TIMEOUT_MS',
      30 * 60_000,
      1_000,
      7 * 24 * 3600 * 1000,
    ),
    tenantMaxRunning: reader.integer('TETHER_TENANT_MAX_RUNNING', 0, 0, 1_000_000),
    memoryPromptChars: reader.integer('TETHER_MEMORY_PROMPT_CHARS', 2_000, 0, 100_000),
    skillsPromptChars: reader.integer('TETHER_SKILLS_PROMPT_CHARS', SKILL_DEFAULTS.promptChars, 0, 100_000),
    skillsCacheDir: path.resolve(
      reader.string('TETHER_SKILLS_CACHE_DIR', path.join(tmpdir(), 'tether-skills')),
    ),
    mcpCallTimeoutMs: reader.integer('TETHER_MCP_CALL_TIMEOUT_MS', 60_000, 100, 3_600_000),
    mcpConnectTimeoutMs: reader.integer('TETHER_MCP_CONNECT_TIMEOUT_MS', 10_000, 100, 600_000),
    mcpMaxResponseBytes: reader.integer(
      'TETHER_MCP_MAX_RESPONSE_BYTES',
      4 * 1024 * 1024,
      1_024,
      256 * 1024 * 1024,
    ),
    mcpListTtlMs: reader.integer('TETHER_MCP_LIST_TTL_MS', 60_000, 0, 24 * 3_600_000),
    profiles,
    defaultProfile,
    secrets: readSecrets(env, reader),
    webhookConcurrency: reader.integer('TETHER_WEBHOOK_CONCURRENCY', 8, 0, 1_000),
    webhookPerEndpoint: reader.integer('TETHER_WEBHOOK_PER_ENDPOINT', 16, 1, 1_000),
    webhookSweepMs: reader.integer('TETHER_WEBHOOK_SWEEP_MS', 30_000, 100, 3_600_000),
    metricsPort: readMetricsPort(reader),
  };
  reader.done();
  return Object.freeze(config);
}

/**
 * `TETHER_WORKER_SHARDS`: the shards a worker takes jobs from, as a comma
 * list of shard numbers (`0,2`); every shard when unset.
 */
function readShards(reader: EnvReader, shards: number): number[] {
  const all = Array.from({ length: shards }, (_, shard) => shard);
  const raw = reader.optional('TETHER_WORKER_SHARDS');
  if (raw === undefined) return all;
  const listed = raw.split(',').map((part) => part.trim());
  const valid = listed.every((part) => /^\d+$/.test(part) && Number(part) < shards);
  if (!valid || listed.length === 0) {
    reader.problem(
      `TETHER_WORKER_SHARDS must list shard numbers from 0 to ${shards - 1} (TETHER_QUEUE_SHARDS is ${shards}), separated by commas, got ${JSON.stringify(raw)}`,
    );
    return all;
  }
  return [...new Set(listed.map(Number))].sort((a, b) => a - b);
}

/** `TETHER_METRICS_PORT`: a TCP port (1 to 65535), or undefined when unset or empty (metrics off). */
function readMetricsPort(reader: EnvReader): number | undefined {
  const raw = reader.optional('TETHER_METRICS_PORT')?.trim();
  if (!raw) return undefined;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 1 || port > 65_535) {
    reader.problem(`TETHER_METRICS_PORT must be a port from 1 to 65535, got ${JSON.stringify(raw)}`);
    return undefined;
  }
  return port;
}
