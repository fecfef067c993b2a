/**
 * A crew run's tree: the run, the children it delegated to, theirs, and so
 * on, each read with `GET /v1/runs/:id` under the caller's key.
 *
 * Strategy: depth first, each parent's children in the order it lists them
 * (their task index), one request at a time, so a tree reads the same way
 * twice and the requests never outnumber `maxRuns`. Invariants:
 * - the root is always read, and its errors are thrown as `get` throws them
 *   (a 404 is a `TetherNotFoundError`);
 * - a child that is gone by the time it is read (a 404: removed after its
 *   parent was read; the API lists only children whose record is kept) stays
 *   in the tree as its parent listed it, with `unread: 'not_found'`; any other
 *   error is thrown;
 * - no run deeper than `maxDepth` below the root and no more than `maxRuns`
 *   runs are read; a child left out stays as its parent lists it, with
 *   `unread: 'max_depth'` or `'max_runs'`, and no children;
 * - a run met twice (a cycle, outside the contract) throws `TetherProtocolError`.
 */
import type { ChildResultStatus, ChildRun, Run, RunStatus } from '@tether/protocol';
import { invalidOption, TetherNotFoundError, TetherProtocolError } from './errors.js';

/** Why a run of the tree was not read. */
export type RunTreeUnread = 'not_found' | 'max_depth' | 'max_runs';

/** One run of a crew tree and its children. */
export interface RunTree {
  id: string;
  /** Its task's position in the delegation that started it; undefined at the root. */
  index: number | undefined;
  /** The run's own status when it was read, else the status its parent lists. */
  status: RunStatus;
  /** A child that has ended: how its parent learned it ended (`escalated` and `timed_out` included). */
  outcome?: ChildResultStatus;
  /** The run as `GET /v1/runs/:id` returned it; undefined when it was not read (see `unread`). */
  run: Run | undefined;
  /** Set when the run was not read: gone (404), or beyond `maxDepth` or `maxRuns`. */
  unread?: RunTreeUnread;
  /** Its children, in the order the run lists them (empty when it was not read). */
  children: RunTree[];
}

/** Options of `TetherClient.tree`. */
export interface TreeOptions {
  /** Levels read below the root: 0 reads the root alone (default 5). */
  maxDepth?: number;
  /** Runs read at most, the root included (default 200). */
  maxRuns?: number;
  signal?: AbortSignal;
}

const DEFAULTS = { maxDepth: 5, maxRuns: 200 };

/** Reads `id` and its descendants with `get`, as the module comment says. */
export async function readRunTree(
  get: (id: string, signal: AbortSignal | undefined) => Promise<Run>,
  id: string,
  options: TreeOptions = {},
): Promise<RunTree & { run: Run }> {
  const maxDepth = options.maxDepth ?? DEFAULTS.maxDepth;
  if (!(Number.isInteger(maxDepth) && maxDepth >= 0)) {
    throw invalidOption(`tree maxDepth must be an integer >= 0 (got ${maxDepth})`);
  }
  const maxRuns = options.maxRuns ?? DEFAULTS.maxRuns;
  if (!(Number.isInteger(maxRuns) && maxRuns >= 1)) {
    throw invalidOption(`tree maxRuns must be an integer >= 1 (got ${maxRuns})`);
  }
  const { signal } = options;
  const seen = new Set<string>([id]);
  let read = 1;

  const node = (run: Run, child?: ChildRun): RunTree & { run: Run } => ({
    id: run.id,
    index: child?.index,
    status: run.status,
    ...(child?.outcome ? { outcome: child.outcome } : {}),
    run,
    children: [],
  });
  const unread = (child: ChildRun, why: RunTreeUnread): RunTree => ({
    id: child.id,
    index: child.index,
    status: child.status,
    ...(child.outcome ? { outcome: child.outcome } : {}),
    run: undefined,
    unread: why,
    children: [],
  });

  const visit = async (tree: RunTree, depth: number): Promise<void> => {
    for (const child of tree.run?.children ?? []) {
      if (seen.has(child.id)) {
        throw new TetherProtocolError(`run ${child.id} appears twice in the tree of ${id}`);
      }
      seen.add(child.id);
      if (depth >= maxDepth) {
        tree.children.push(unread(child, 'max_depth'));
        continue;
      }
      if (read >= maxRuns) {
        tree.children.push(unread(child, 'max_runs'));
        continue;
      }
      read++;
      let run: Run;
      try {
        run = await get(child.id, signal);
      } catch (error) {
        if (!(error instanceof TetherNotFoundError)) throw error;
        tree.children.push(unread(child, 'not_found'));
        continue;
      }
      const branch = node(run, child);
      tree.children.push(branch);
      await visit(branch, depth + 1);
    }
  };

  const root = node(await get(id, signal));
  await visit(root, 0);
  return root;
}
