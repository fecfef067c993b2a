import type { RunTree } from '../tree.js';
import {
  colorChildStatus,
  colorStatus,
  firstLine,
  glyphsFor,
  liveChildren,
  relativeTime,
  truncate,
  waitingFor,
} from './format.js';
import type { Colors } from './io.js';

/** Longest note after a run's status, so a line of the tree fits a terminal. */
const NOTE_WIDTH = 72;

/**
 * A crew run's tree, one run a line: the root's id and status, then each
 * child under its parent with its task index, status and what it came to
 * (its output's first line, its error, its question, the children it waits
 * for, or why it was not read), drawn with `glyphsFor(c)`:
 *
 * ```
 * run_…  completed
 * ├─ [0] run_…  completed  Parser written.
 * └─ [1] run_…  failed     ERR_AGENT_MAX_STEPS: Too many steps
 * ```
 */
export function formatRunTree(tree: RunTree, c: Colors): string[] {
  const glyphs = glyphsFor(c);
  const width = widestStatus(tree);
  const row = (node: RunTree, head: string): string => {
    const note = noteOf(node, c);
    // An escalated or timed-out child says so, rather than its run's completed or failed.
    const outcome = node.outcome !== node.status ? node.outcome : undefined;
    const shown = outcome ?? node.status;
    const status = outcome ? colorChildStatus(outcome, c) : colorStatus(node.status, c);
    return note === ''
      ? `${head}  ${status}`
      : `${head}  ${status}${' '.repeat(width - shown.length)}  ${note}`;
  };
  const lines = [row(tree, c.bold(tree.id))];
  const walk = (node: RunTree, prefix: string) => {
    node.children.forEach((child, i) => {
      const last = i === node.children.length - 1;
      const branch = last ? glyphs.lastBranch : glyphs.branch;
      lines.push(row(child, `${c.dim(prefix + branch)}${c.dim(`[${child.index ?? i}]`)} ${child.id}`));
      walk(child, prefix + (last ? glyphs.space : glyphs.pipe));
    });
  };
  walk(tree, '');
  return lines;
}

function widestStatus(tree: RunTree): number {
  const shown = tree.outcome && tree.outcome !== tree.status ? tree.outcome : tree.status;
  return Math.max(shown.length, ...tree.children.map(widestStatus));
}

/** What a run of the tree came to, in a few words. */
function noteOf(node: RunTree, c: Colors): string {
  const run = node.run;
  if (run === undefined) {
    switch (node.unread) {
      case 'not_found':
        return c.dim('(gone: no longer stored)');
      case 'max_depth':
        return c.dim('(not read: deeper than the tree is read)');
      default:
        return c.dim('(not read: too many runs in the tree)');
    }
  }
  switch (run.status) {
    case 'completed':
      return firstLine(run.output ?? '', NOTE_WIDTH).line;
    case 'failed':
      return run.error ? c.red(firstLine(`${run.error.code}: ${run.error.message}`, NOTE_WIDTH).line) : '';
    case 'waiting_for_input':
      if (run.pendingClarify)
        return c.magenta(`? ${firstLine(run.pendingClarify.question, NOTE_WIDTH - 2).line}`);
      if (run.pendingApprovals && run.pendingApprovals.length > 0) {
        const tools = run.pendingApprovals.map((approval) => approval.tool).join(', ');
        return c.magenta(truncate(`waiting for approval: ${tools}`, NOTE_WIDTH));
      }
      return '';
    case 'waiting_for_children':
      return c.dim(waitingFor(liveChildren(run)));
    case 'scheduled':
      return run.runAt ? c.dim(`starts ${relativeTime(run.runAt)}`) : '';
    default:
      return '';
  }
}
