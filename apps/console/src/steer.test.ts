import { TetherApiError } from '@tether/client';
import { describe, expect, it } from 'vitest';
import { deliveryText, steerRefusalText, untakenMessages } from './steer.js';
import type { TimelineItem } from './timeline.js';

const at = '2026-11-30T12:00:00.000Z';
const item = (messageId: string, delivery: Extract<TimelineItem, { kind: 'user' }>['delivery']) =>
  ({ kind: 'user', key: messageId, at, messageId, content: `text of ${messageId}`, delivery }) as const;

describe('untakenMessages', () => {
  it("lists the timeline's pending messages, then this page's not received yet, each once", () => {
    const items: TimelineItem[] = [
      item('msg_1', { state: 'delivered', turn: 2 }),
      { kind: 'status', key: 's', at, text: 'Resumed at step 1' },
      item('msg_2', { state: 'pending' }),
      item('msg_3', { state: 'undelivered' }),
    ];
    const sent = [
      { messageId: 'msg_1', content: 'text of msg_1' },
      { messageId: 'msg_2', content: 'text of msg_2' },
      { messageId: 'msg_4', content: 'just sent' },
    ];
    expect(untakenMessages(items, sent)).toEqual([
      { messageId: 'msg_2', content: 'text of msg_2' },
      { messageId: 'msg_4', content: 'just sent' },
    ]);
    expect(untakenMessages([], [])).toEqual([]);
  });
});

describe('deliveryText', () => {
  it('says where a message is', () => {
    expect(deliveryText({ state: 'pending' })).toBe('Pending: the run takes it at its next turn');
    expect(deliveryText({ state: 'delivered', turn: 3 })).toBe('Delivered: taken at turn 3');
    expect(deliveryText({ state: 'undelivered' })).toBe('Not delivered: the run ended before taking it');
  });
});

describe('steerRefusalText', () => {
  const refusal = (status: number, code: string, message = 'said by the API') =>
    new TetherApiError(code, message, { status, method: 'POST', url: 'http://api/v1/runs/run_1/messages' });

  it('says a refusal in words, by its status and code, else with the API’s own message', () => {
    expect(steerRefusalText(refusal(409, 'ERR_RUN_ENDED'))).toBe(
      'The run has ended: it takes no more messages.',
    );
    expect(steerRefusalText(refusal(409, 'ERR_RUN_MESSAGES_LIMIT'))).toMatch(
      /^The run already holds 20 messages it has not taken/,
    );
    expect(steerRefusalText(refusal(404, 'ERR_RUN_NOT_FOUND'))).toBe(
      'This run is gone: it was deleted, or this key may not see it.',
    );
    expect(steerRefusalText(refusal(400, 'ERR_VALIDATION', 'content must be at most 20000 characters'))).toBe(
      'The message was not sent: content must be at most 20000 characters (ERR_VALIDATION)',
    );
    expect(steerRefusalText(new TypeError('Failed to fetch'))).toBe(
      'The message was not sent: Failed to fetch',
    );
  });
});
