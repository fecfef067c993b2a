import type { TSchema } from '@sinclair/typebox';
import type {
  EmitEvent,
  Locale,
  MemoryDraft,
  MemoryRecord,
  MemorySaveOutcome,
  SkillSummary,
  SkillView,
  SkillWrite,
  SkillWriteResult,
  TodoItem,
} from '@tether/protocol';
import type { ToolLimits } from './limits.js';

/**
 * A tool as the catalog knows it: a name, the toolset it belongs to, a
 * description for the model and its TypeBox parameters. No behaviour.
 */
export interface ToolSchema<P extends TSchema = TSchema> {
  name: string;
  toolset: string;
  description: string;
  parameters: P;
}

/** The sandbox modes of `bash`, in the order the docs describe them. */
export const SANDBOX_MODES = ['bwrap', 'none', 'auto'] as const;

/**
 * How `bash` isolates commands: `bwrap` (bubblewrap, required), `none` (a
 * process group and a cleared environment only) or `auto` (bwrap when it works
 * on the host, else `none` with a warning).
 */
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** Language of the model-facing messages the design document words itself (defined in protocol). */
export type { Locale };

/** The subset of a pino logger the tools use. */
export interface ToolLogger {
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

/** Where a run keeps its todo list (the run's checkpoint, in the worker). */
export interface TodoStore {
  get(): TodoItem[];
  set(items: TodoItem[]): void;
}

/**
 * The run's memory scope, for `memory_save` and `memory_recall`: the worker
 * builds it on Redis (`@tether/store`'s `MemoryStore`), bound to the run's
 * tenant and scope, so the tools reach no other.
 */
export interface MemoryAccess {
  /** The scope's name (for messages). */
  readonly scope: string;
  /** Saves an entry, or replaces `draft.replaces`; the content has passed the guard. */
  save(draft: MemoryDraft): Promise<MemorySaveOutcome>;
  /** The best `limit` entries for `query`, or the most recent for an empty one. */
  recall(query: string, limit: number): Promise<MemoryRecord[]>;
}

/**
 * The tenant's skills, as the `skill` tools reach them: the worker builds it
 * on `@tether/store`'s store for the run's tenant, so this package stays free
 * of Redis. Every write it makes is the agent's: a pinned skill is refused.
 */
export interface SkillsAccess {
  /** Every skill of the tenant, by name. */
  list(): Promise<SkillSummary[]>;
  /** A skill's summary, `SKILL.md` and files, or undefined. */
  view(name: string): Promise<SkillView | undefined>;
  /** One file of a skill and the skill's summary; content `null`: no such file; undefined: no such skill. */
  readFile(name: string, path: string): Promise<{ skill: SkillSummary; content: string | null } | undefined>;
  /** Writes a skill (its format already checked by the tool). */
  save(write: SkillWrite): Promise<SkillWriteResult>;
  /** Deletes a skill, unless it is pinned. */
  delete(name: string): Promise<'ok' | 'missing' | 'pinned'>;
  /**
   * Where `bash` finds the skills (`<mountPath>/<name>/…`), when the run has
   * them mounted; the skill tools name it in their results.
   */
  mountPath?: string | undefined;
}

/** A host directory `bash` sees read-only inside its sandbox, at `target`. */
export interface ReadOnlyBind {
  /** Absolute path on the host. */
  source: string;
  /** Absolute path inside the sandbox, under `/run` (the host's root is read-only: no mount point can be made there). */
  target: string;
  /**
   * A host directory that holds `source` (and others not for this run, such as
   * other tenants' skills): covered by an empty read-only tmpfs in the
   * sandbox, so nothing of it shows at its host path.
   */
  hide?: string | undefined;
}

/**
 * Everything the tools of one run (one attempt) need, built by the worker.
 * Libraries never read `process.env`: the worker passes `TETHER_SANDBOX`
 * through `sandbox`.
 */
export interface RunContext {
  runId: string;
  /** Absolute path of the run's workspace directory; it must exist. */
  workspace: string;
  /** Receives `tool.output` and `todo.updated` events. */
  emit: EmitEvent;
  /** Run-level abort (cancel). Each call also gets its own signal. */
  signal: AbortSignal;
  todos: TodoStore;
  /** Default `auto`. */
  sandbox?: SandboxMode;
  /** Whether `bash` may use the network. Default `false`. */
  allowNetwork?: boolean;
  /**
   * The directory that holds every run's workspace. Under bwrap it is covered
   * by an empty tmpfs and only this run's workspace is bound back. Default:
   * the parent of `workspace`.
   */
  workspaceRoot?: string;
  /**
   * The unprivileged host user `bash` commands run as when the worker runs as
   * root (default `nobody`, 65534:65534); the workspace's files are handed to
   * it. Ignored when the worker is not root: commands run as the worker's user.
   */
  sandboxUser?: { uid: number; gid: number };
  /**
   * How long a command may go without the worker's heartbeat before its
   * watchdog kills it (a stopped or frozen worker). Default 5000 ms. The worker
   * keeps it below half its lock duration, so a command is dead before another
   * worker can take the run over.
   */
  commandLeaseMs?: number;
  /** Language of the clarify fallback and of the patch messages the design gives. Default `en`. */
  locale?: Locale;
  /** Overrides of {@link DEFAULT_TOOL_LIMITS}; unknown keys and out-of-range values are refused. */
  limits?: Partial<ToolLimits>;
  /**
   * Extra environment variables for `bash`, set over the allow-list (`PATH`,
   * `HOME`, `LANG`, `LC_ALL`, `TERM`, `TMPDIR`). Nothing else from the
   * worker's environment reaches a command; pass only what a tool should see.
   */
  env?: Readonly<Record<string, string>>;
  logger?: ToolLogger;
  /** The run's memory scope (toolset `memory`); without it the memory tools answer that there is none. */
  memory?: MemoryAccess | undefined;
  /** The tenant's skills, for the `skill` toolset; without it, the skill tools say skills are not available here. */
  skills?: SkillsAccess;
  /**
   * Host directories `bash` sees read-only under bwrap (the tenant's skills at
   * `/run/skills`); each target must lie under `/run`. Ignored without a sandbox.
   */
  readOnlyBinds?: readonly ReadOnlyBind[];
}

/** Per call: the model's tool-call id and the call's own abort signal. */
export interface ToolCallContext {
  callId: string;
  signal: AbortSignal;
}

/**
 * What a tool hands back to the loop. `content` is written for the model:
 * what happened or what failed, why, and how to fix it.
 */
export interface ToolResult {
  ok: boolean;
  content: string;
  /** On failure, the stable `ERR_TOOL_...` code (for logs and metrics; the model reads `content`). */
  code?: string;
}

/** A tool instance bound to one run. */
export interface Tool {
  name: string;
  schema: ToolSchema;
  execute(args: unknown, call: ToolCallContext): Promise<ToolResult>;
  /**
   * The MCP server the tool belongs to (its `name` is then `<server>__<tool>`):
   * the `tool.call` and `tool.result` events of its calls name it.
   */
  server?: string;
  /**
   * Parses and checks the model's raw JSON arguments, for a tool whose
   * `schema.parameters` is plain JSON Schema rather than TypeBox (an MCP
   * server's): {@link executeTool} calls it instead of the TypeBox check.
   */
  parseArguments?(
    rawArguments: string,
  ): { ok: true; args: Record<string, unknown> } | { ok: false; result: ToolResult };
  /**
   * Releases what the tool holds between calls (`bash`: the sandbox prepared
   * for the next command). Call it once the run's attempt is over; a call
   * made after it still works, without that head start. Not called, the
   * prepared sandbox is discarded after a minute unused; a process that exits
   * before then has its processes killed by their watchdog, but leaves the
   * cgroup's empty directory behind.
   */
  close?(): Promise<void>;
}
