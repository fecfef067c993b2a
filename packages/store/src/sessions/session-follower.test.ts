import type { RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { asSessionEvent, compareIds, parseSessionCursor, sessionCursor } from './session-follower.js';

describe('session events', () => {
  it('are a run’s events with their session cursor as id, one object per run event for every follower', () => {
    const event = { id: '17-0', runId: 'run_a', type: 'run.queued', at: 'x', data: {} } as RunEvent;
    const wrapped = asSessionEvent('run_a', event);
    expect(wrapped).toEqual({ ...event, id: 'run_a:17-0' });
    expect(asSessionEvent('run_a', event)).toBe(wrapped);
    expect(asSessionEvent('run_a', { ...event })).not.toBe(wrapped);
    expect(event.id).toBe('17-0');
  });

  it('have cursors that read back, and refuse what is not one', () => {
    const runId = 'run_01m8p072ajgvtfs0q4wt8sqht4_fs0q4wt8sqht4abcd';
    expect(parseSessionCursor(sessionCursor(runId, '1764000000000-3'))).toEqual({
      runId,
      eventId: '1764000000000-3',
    });
    for (const bad of ['0', 'run_x', `${runId}:abc`, `ses_1:1-0`, `${runId}:1-0:2`]) {
      expect(parseSessionCursor(bad), bad).toBeUndefined();
    }
  });
});

describe('compareIds', () => {
  it('orders stream ids as numbers, ms then seq, with 0 and a missing seq first', () => {
    const sorted = [
      '0',
      '0-1',
      '9-0',
      '10-0',
      '10-2',
      '10-10',
      '1700000000000-9',
      '1700000000000-10',
      '1700000000001-0',
    ];
    for (let i = 0; i < sorted.length; i++) {
      for (let j = 0; j < sorted.length; j++) {
        const a = sorted[i] as string;
        const b = sorted[j] as string;
        expect(Math.sign(compareIds(a, b)), `${a} vs ${b}`).toBe(Math.sign(i - j));
      }
    }
    expect(compareIds('5', '5-0')).toBe(0);
    expect(compareIds('0-0', '0')).toBe(0);
  });
});
