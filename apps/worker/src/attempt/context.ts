import type { Checkpoint, PendingDelegation } from '@tether/agent';
import type {
  ErrorBody,
  PendingApproval,
  PendingClarify,
  PendingToolCall,
  RunModel,
  Usage,
} from '@tether/protocol';
import type { TenantBudgetStore, UsageLedger } from '@tether/store/budgets';
import type { McpServerStore } from '@tether/store/mcp-servers';
import type { MemoryStore } from '@tether/store/memory';
import type { NewRun, RunEngine, RunJobData, RunStore } from '@tether/store/runs';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { WorkerConfig } from '../config.js';
import type { WorkerMetrics } from '../metrics.js';
import type { WorkerSkills } from '../skills.js';
import type { ResolvedHooks } from '../worker-hooks.js';
import type { McpListings } from './mcp-listings.js';
import type { AttemptObserver } from './observe.js';
import type { Capped, TenantSlotKeeper } from './tenant-slot.js';

/** What every step of one attempt works with. */
export interface AttemptContext {
  job: Job<RunJobData>;
  /** BullMQ's lock token for the job (moving the job needs it). */
  token: string | undefined;
  runId: string;
  /** The attempt number, from 1. */
  attempt: number;
  /** The fencing token the attempt writes with (`workerId:lockToken`): the run refuses it once another worker owns it. */
  fence: string;
  config: Readonly<WorkerConfig>;
  store: RunStore;
  /** The run's transitions for this attempt: each one step of the run, its job's move and the look after it. */
  engine: RunEngine;
  log: Logger;
  /** Wakes the run now at the head of a session's queue (after one of its runs ended). */
  wakeSession: (sessionId: string) => Promise<void>;
  /** A crew child's parent, as its job names it. */
  parentRunId: string | undefined;
  /** A crew child's tree's root, once claimed (its spec names it): told of the child's decisions on tool calls. */
  rootRunId?: string | undefined;
  /** The crew's steps that touch the queue (the worker's RunService). */
  crew: CrewQueue;
  /** Whether the run has the delegate tools (known once prepared; undefined before). */
  delegates?: boolean | undefined;
  /** The tenants' cap on running runs (`TETHER_TENANT_MAX_RUNNING`); undefined when there is none. */
  tenantSlots?: TenantSlotKeeper | undefined;
  /** The tenants' budgets and usage ledger; without it, turns are neither counted nor checked. */
  budgets?: WorkerBudgets | undefined;
  /** Memory scopes (toolset `memory`); without it a run's memory tools answer that there is none. */
  memory?: MemoryStore | undefined;
  /** The tenants' skills (the store, and their folders on this host); without it, runs get no skills. */
  skills?: WorkerSkills | undefined;
  /** The MCP servers tenants registered; without it, a run's name-only entries are this worker's stdio servers only. */
  mcpServers?: McpServerStore | undefined;
  /** This worker's MCP tool listings, shared by its runs. */
  mcpListings?: McpListings | undefined;
  /** The run's tenant, once known (the job says it, or the claim). */
  tenant?: string | undefined;
  /** Webhook deliveries of the events the attempt appended; none without it. */
  webhooks?: RunDispatch | undefined;
  /** What the attempt reports for metrics and traces; undefined when the worker has neither. */
  observer?: AttemptObserver | undefined;
  /** The test stack's seams into the attempt's timing (`startWorker`'s `hooks`); no-ops in a deployment. */
  hooks: ResolvedHooks;
}

/** What the worker holds of the tenants' budgets and usage ledger (see tenant-budget.ts). */
export interface WorkerBudgets {
  budgets: TenantBudgetStore;
  ledger: UsageLedger;
  metrics?: WorkerMetrics | undefined;
}

/** What an attempt needs of webhooks: its run's new events turned into deliveries. */
export interface RunDispatch {
  /** Records the deliveries of the run's events not dispatched yet (`WebhookDispatcher.dispatch`). */
  dispatch(runId: string, tenant?: string): Promise<number>;
}

/** What the crew needs of the queue: children queued, ended, cancelled. */
export interface CrewQueue {
  /**
   * Queues the jobs of children created and recorded in their parent's delegation (those still
   * queued); their jobs carry `requestId`, the id of the request that submitted the crew's root.
   */
  queueChildren(children: readonly NewRun[], requestId?: string | undefined): Promise<void>;
  timeOutChild(childRunId: string, parentRunId: string, timeoutMs: number): Promise<void>;
  cancelChildren(runId: string): Promise<void>;
  /** Makes sure an ended child's result reached its parent, and that a parent with every result is awake. */
  repairChild(childRunId: string, parentRunId: string): Promise<void>;
  /** The BullMQ prefix of the queue a new run goes to (its shard's). */
  queueOf(runId: string): string;
}

/**
 * How an attempt ends, as the worker sees it: six kinds, each one engine step
 * in `settleOutcome` (see docs/architecture.md, "The lifecycle").
 */
export type Settlement =
  | {
      kind: 'completed';
      output: string;
      checkpoint: Checkpoint;
      escalated?: boolean | undefined;
      /** A run with `output`: the arguments of its accepted `submit_result` call. */
      result?: unknown;
    }
  | {
      kind: 'failed';
      error: ErrorBody;
      retryable: boolean;
      usage?: Usage | undefined;
      /** The model that answered the latest turn, if any did. */
      model?: RunModel | undefined;
      /** The error as thrown, handed to BullMQ for a retry. */
      cause?: Error | undefined;
    }
  /** Cancelled by request. */
  | { kind: 'cancelled' }
  /** Never started, and past its deadline to start by (`expiresAtMs`): it is not started, but ended `expired`. */
  | { kind: 'expired'; expiresAtMs: number }
  | Waiting
  | Released
  | Lost;

/**
 * The run waits on its waitpoint, holding no slot: a new one, whose requests
 * are recorded now (`open`), or the one it waits on already, woken before it
 * resolved (`again`, until the epoch ms its deadline falls at).
 */
export type Waiting = { kind: 'waiting' } & (
  | { on: 'question'; open: PendingClarify }
  /** The model's client tool calls, requested together. */
  | { on: 'tool_output'; open: PendingToolCall[] }
  /** The model's tool calls that wait for a decision, asked together. */
  | { on: 'approval'; open: PendingApproval[] }
  /** Tasks handed to crew children, which are created, recorded and queued at settle. */
  | { on: 'children'; open: { delegation: PendingDelegation; children: NewRun[] } }
  | { on: 'question' | 'tool_output' | 'approval' | 'children'; again: { untilMs: number } }
);

/**
 * The run gives its turn up without running, for an attempt later: at the
 * worker's shutdown (another worker goes on from the checkpoint), or, before
 * its claim, while another run of its session is ahead of it, or while its
 * tenant is at its cap on running runs ({@link Capped}), or while a scheduled
 * run's time has not come.
 */
export type Released =
  | { kind: 'released'; why: 'shutdown' }
  | { kind: 'released'; why: 'session'; ahead: string }
  /** A scheduled run whose job came up before its `runAt` (moved by a reschedule meanwhile): it waits until then. */
  | { kind: 'released'; why: 'scheduled'; runAtMs: number }
  | Capped;

/**
 * This attempt has nothing more to do with the run, and writes nothing: the
 * run is gone or has ended (`handBack` false: the job completes), or this
 * attempt no longer owns it (`handBack` true): its lock was not renewed in
 * time, or another worker claimed the run. The job then goes back to waiting
 * if its lock is still this worker's, for the next attempt to take the run
 * over. The job lock decides, not the run's owner: a worker whose lock ran out
 * before its claim owns a run whose job it does not hold, and completing the
 * job from under it would leave the run running with no job.
 */
export type Lost = { kind: 'lost'; why: string; handBack: boolean };

export function isSettlement(value: object): value is Settlement {
  return 'kind' in value;
}
