import { readFileSync } from 'node:fs';
import { RUN_EVENT_TYPES, RUN_STATUSES } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import * as scripts from './commands/scripts.js';
import {
  LIFECYCLE_END,
  LIVE_STATUSES,
  lifecycleLua,
  questionState,
  stepsOf,
  TRANSITIONS,
  transitionsTable,
} from './lifecycle.js';

const ARCHITECTURE = new URL('../../../../docs/architecture.md', import.meta.url);

describe('the lifecycle', () => {
  it('has five live statuses and four terminal ones', () => {
    expect(LIVE_STATUSES).toEqual([
      'scheduled',
      'queued',
      'running',
      'waiting_for_input',
      'waiting_for_children',
    ]);
    expect(lifecycleLua()).toContain(
      'local TERMINAL = { completed = true, failed = true, cancelled = true, expired = true }',
    );
  });

  it('names real scripts, statuses and events in every step', () => {
    for (const t of TRANSITIONS) {
      expect(Object.keys(scripts), t.step).toContain(t.script);
      if (t.from !== 'new') for (const status of t.from) expect(RUN_STATUSES).toContain(status);
      if (t.to !== 'unchanged') expect(RUN_STATUSES).toContain(t.to);
      for (const event of typeof t.event === 'string' ? [t.event] : (t.event ?? []))
        expect(RUN_EVENT_TYPES).toContain(event);
    }
  });

  it("guards every step of every script with the table's own check", () => {
    // The source Redis runs (includes expanded): each step the table gives a script is named there
    // and taken under allowed(step, status), generated from the table: the table is the scripts' guard.
    for (const t of TRANSITIONS) {
      if (t.from === 'new') continue;
      const source = (scripts as unknown as Record<string, { source: string }>)[t.script]?.source ?? '';
      // What follows the generated code.
      const code = source.slice(source.indexOf(LIFECYCLE_END) + LIFECYCLE_END.length);
      expect(code, `${t.script}.lua names "${t.step}"`).toContain(`'${t.step}'`);
      expect(code, `${t.script}.lua calls allowed()`).toMatch(/\b(allowed|refusedOwnerStep)\(/);
      expect(stepsOf(t.script)).toContain(t.step);
    }
    expect(lifecycleLua()).toContain('["wait for input"] = { running = true },');
    expect(lifecycleLua()).toContain(
      `["cancel"] = { ${LIVE_STATUSES.map((s) => `${s} = true`).join(', ')} },`,
    );
  });

  it('says a question still pending when its run ended was cancelled', () => {
    expect(questionState('pending', 'waiting_for_input')).toBe('pending');
    expect(questionState('pending', 'cancelled')).toBe('cancelled');
    expect(questionState('pending', 'failed')).toBe('cancelled');
    expect(questionState('answered', 'completed')).toBe('answered');
    expect(questionState('timed_out', 'running')).toBe('timed_out');
  });

  it('is the table docs/architecture.md shows', () => {
    const doc = readFileSync(ARCHITECTURE, 'utf8');
    const shown = /<!-- lifecycle-table:start -->\n([\s\S]*?)\n?<!-- lifecycle-table:end -->/.exec(doc)?.[1];
    expect(
      shown?.trim(),
      'docs/architecture.md: put transitionsTable() of packages/store/src/runs/lifecycle.ts between the lifecycle-table markers',
    ).toBe(transitionsTable());
  });
});
