import { type RunStatus, TERMINAL_STATUSES } from '@tether/protocol';
import { scanKeys } from '../redis/connection.js';
import type { StoreContext } from '../redis/store-context.js';
import * as scripts from './commands/scripts.js';

/**
 * Moving the waits of runs of the release before the waitpoint into their waitpoints: a question
 * (`pending` and `clarify:<id>`), client tool calls (`tool-calls`, `tool-outputs`) or a delegation
 * (`delegation`), each a run's keys. Every worker of this release does it at its start, before it
 * takes any run, unless the deployment's marker says it was done; each run is one step
 * (`migrateWaitpoint`), so two workers doing it at once move each run once. The previous release's
 * processes must be stopped first: what one of them writes after the move is not read. To be
 * removed one release after the waitpoint.
 */

/** What a run's checkpoint says it waits on: the kind, and the question (JSON) for a question. */
export interface LegacyWait {
  kind: 'question' | 'tool_output' | 'children';
  question: string;
}

/**
 * The wait a stored checkpoint holds (its `waitpoint`, or the three fields before it), undefined
 * when none or when it cannot be read.
 */
export function waitOfCheckpoint(json: string | null): LegacyWait | undefined {
  if (!json) return undefined;
  let checkpoint: {
    waitpoint?: {
      requests?: {
        kind?: string;
        requestId?: string;
        question?: string;
        choices?: string[];
        expiresAt?: string;
      }[];
    };
    pendingClarify?: { requestId: string; question: string; choices: string[]; expiresAt: string };
    pendingToolCalls?: unknown[];
    pendingDelegation?: unknown;
  };
  try {
    checkpoint = JSON.parse(json);
  } catch {
    return undefined;
  }
  const first = checkpoint.waitpoint?.requests?.[0];
  const question = first?.kind === 'question' ? first : checkpoint.pendingClarify;
  if (question) {
    const { requestId, question: text, choices, expiresAt } = question;
    return { kind: 'question', question: JSON.stringify({ requestId, question: text, choices, expiresAt }) };
  }
  if (first?.kind === 'tool_output' || checkpoint.pendingToolCalls?.length)
    return { kind: 'tool_output', question: '' };
  if (first?.kind === 'children' || checkpoint.pendingDelegation) return { kind: 'children', question: '' };
  return undefined;
}

/** The marker of a deployment whose waits were moved (a string, its time). */
export function migrationMarker(ctx: StoreContext): string {
  return `${ctx.keys.namespace}:{migrations}:waitpoint`;
}

/**
 * Moves every live run's wait of the previous release into its waitpoint, once per deployment
 * (the marker is set after a pass). Returns how many runs were moved.
 */
export async function migrateWaitpoints(ctx: StoreContext): Promise<number> {
  const marker = migrationMarker(ctx);
  if (await ctx.redis.exists(marker)) return 0;
  const ns = ctx.keys.namespace;
  const escaped = ns.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // A run's key: its base (as `RunKeys.record`) then the suffix of an old wait.
  const key = new RegExp(
    `^${escaped}:(?:run:\\{(run_[^}:]+)\\}|run:\\{run_[^}:]+\\}:child:(run_[^:]+)|ses:\\{s_[^}]+\\}:run:(run_[^:]+)):(?:clarify:.+|pending|tool-calls|delegation)$`,
  );
  const runIds = new Set<string>();
  for (const pattern of [
    `${ns}:*:clarify:*`,
    `${ns}:*:pending`,
    `${ns}:*:tool-calls`,
    `${ns}:*:delegation`,
  ]) {
    for (const name of await scanKeys(ctx.redis, pattern)) {
      const match = key.exec(name);
      const runId = match?.[1] ?? match?.[2] ?? match?.[3];
      if (runId) runIds.add(runId);
    }
  }
  let moved = 0;
  for (const runId of runIds) {
    const keys = ctx.keys.run(runId);
    const [status, checkpoint] = await Promise.all([
      ctx.redis.hget(keys.record, 'status'),
      ctx.redis.get(keys.checkpoint),
    ]);
    if (!status || TERMINAL_STATUSES.includes(status as RunStatus)) continue;
    const wait = waitOfCheckpoint(checkpoint);
    if (!wait) continue;
    const requestId =
      wait.kind === 'question' ? (JSON.parse(wait.question) as { requestId: string }).requestId : '';
    const reply = await scripts.migrateWaitpoint.run(ctx.redis, {
      keys: {
        record: keys.record,
        waitpoint: keys.waitpoint,
        waitpointResults: keys.waitpointResults,
        pending: keys.legacy.pending,
        clarify: requestId ? keys.legacy.clarify(requestId) : keys.unused,
        toolCalls: keys.legacy.toolCalls,
        toolOutputs: keys.legacy.toolOutputs,
        delegation: keys.legacy.delegation,
      },
      args: { kind: wait.kind, question: wait.question },
    });
    if (reply === 'moved') moved++;
  }
  await ctx.redis.set(marker, String(Date.now()));
  return moved;
}
