/**
 * formatRunTree on fixture trees: the branches in ASCII without colour and in
 * box-drawing marks with it, statuses aligned, and each run's note (output,
 * error, question, the children it waits for, why it was not read).
 */

import { stripVTControlCharacters } from 'node:util';
import type { Run } from '@tether/protocol';
import pc from 'picocolors';
import { describe, expect, it } from 'vitest';
import type { RunTree } from '../tree.js';
import { formatRunTree } from './run-tree.js';

function run(id: string, fields: Partial<Run> = {}): Run {
  return { id, status: 'running', createdAt: '2026-01-01T00:00:00.000Z', attempts: 1, todos: [], ...fields };
}

function read(r: Run, index: number | undefined, children: RunTree[] = []): RunTree {
  return { id: r.id, index, status: r.status, run: r, children };
}

/** root ─ [0] a (completed) ─ [0] a0 (waiting for input); [1] b (failed); [2] c (waiting for children) ─ [0] c0 (gone) */
const tree: RunTree = read(
  run('run_root', {
    status: 'waiting_for_children',
    children: [
      { id: 'run_a', index: 0, status: 'completed' },
      { id: 'run_b', index: 1, status: 'failed' },
      { id: 'run_c', index: 2, status: 'waiting_for_children' },
    ],
  }),
  undefined,
  [
    read(run('run_a', { status: 'completed', output: 'Parser written.\nSee src/parser.ts.' }), 0, [
      read(
        run('run_a0', {
          status: 'waiting_for_input',
          pendingClarify: {
            requestId: 'q1',
            question: 'Which grammar?',
            choices: [],
            expiresAt: '2026-01-01T00:10:00.000Z',
          },
        }),
        0,
      ),
    ]),
    read(
      run('run_b', { status: 'failed', error: { code: 'ERR_AGENT_MAX_STEPS', message: 'Too many steps' } }),
      1,
    ),
    read(
      run('run_c', {
        status: 'waiting_for_children',
        children: [{ id: 'run_c0', index: 0, status: 'running' }],
      }),
      2,
      [{ id: 'run_c0', index: 0, status: 'running', run: undefined, unread: 'not_found', children: [] }],
    ),
  ],
);

describe('formatRunTree', () => {
  it('draws ASCII branches without colour, statuses aligned, a note per run', () => {
    expect(formatRunTree(tree, pc.createColors(false))).toEqual([
      'run_root  waiting_for_children  waiting for 1 child',
      '|- [0] run_a  completed             Parser written.',
      '|  `- [0] run_a0  waiting_for_input     ? Which grammar?',
      '|- [1] run_b  failed                ERR_AGENT_MAX_STEPS: Too many steps',
      '`- [2] run_c  waiting_for_children  waiting for 1 child',
      '   `- [0] run_c0  running               (gone: no longer stored)',
    ]);
  });

  it('draws box-drawing branches with colour', () => {
    const lines = formatRunTree(tree, pc.createColors(true)).map((l) => stripVTControlCharacters(l));
    expect(lines.slice(1).map((l) => l.split(' [')[0])).toEqual(['├─', '│  └─', '├─', '└─', '   └─']);
  });

  it('leaves a run with nothing to say without a note, and says why a run was not read', () => {
    const small: RunTree = read(run('run_root', { status: 'completed', output: '' }), undefined, [
      read(run('run_a', { status: 'cancelled' }), 0),
      { id: 'run_b', index: 1, status: 'queued', run: undefined, unread: 'max_depth', children: [] },
      { id: 'run_c', index: 2, status: 'queued', run: undefined, unread: 'max_runs', children: [] },
    ]);
    expect(formatRunTree(small, pc.createColors(false))).toEqual([
      'run_root  completed',
      '|- [0] run_a  cancelled',
      '|- [1] run_b  queued     (not read: deeper than the tree is read)',
      '`- [2] run_c  queued     (not read: too many runs in the tree)',
    ]);
  });

  it('shows an escalated or timed-out child by how its parent learned it ended', () => {
    const escalated: RunTree = {
      ...read(run('run_a', { status: 'completed', output: 'Which spec version?' }), 0),
      outcome: 'escalated',
    };
    const timedOut: RunTree = {
      ...read(
        run('run_b', { status: 'failed', error: { code: 'ERR_CREW_CHILD_TIMEOUT', message: 'too slow' } }),
        1,
      ),
      outcome: 'timed_out',
    };
    const done: RunTree = {
      ...read(run('run_c', { status: 'completed', output: 'ok' }), 2),
      outcome: 'completed',
    };
    const root = read(run('run_root', { status: 'completed', output: '' }), undefined, [
      escalated,
      timedOut,
      done,
    ]);
    expect(formatRunTree(root, pc.createColors(false))).toEqual([
      'run_root  completed',
      '|- [0] run_a  escalated  Which spec version?',
      '|- [1] run_b  timed_out  ERR_CREW_CHILD_TIMEOUT: too slow',
      '`- [2] run_c  completed  ok',
    ]);
  });
});
