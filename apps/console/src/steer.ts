/**
 * Steering a live run as the run page does it: the request that sends a
 * message (`POST /v1/runs/:id/messages`), what a refusal means in words, and
 * which messages the run has not taken yet. The last two are pure, so the unit
 * tests check them without a browser.
 *
 * A message is the page's from the moment the API takes it (202, its id) until
 * the run's `message.received` reaches the timeline; from then on the
 * timeline's item says where it is, whoever sent it (this tab, another one,
 * the API).
 */

import type { TetherClient } from '@tether/client';
import type { MessageDelivery, TimelineItem } from './timeline.js';

/** A message sent to a run: its id (the API's answer) and its text. */
export interface SentMessage {
  messageId: string;
  content: string;
}

/**
 * `POST /v1/runs/:id/messages` through the SDK: resolves with the message's id; a refusal throws a
 * `TetherApiError` carrying the API's status, code and message. Never retried (the API has no
 * idempotency key for it: a message sent twice would be taken twice).
 */
export async function sendRunMessage(client: TetherClient, runId: string, content: string): Promise<string> {
  return (await client.steer(runId, content)).messageId;
}

/** What a 409 from the messages route means, by its code. */
const CONFLICTS: Record<string, string> = {
  ERR_RUN_ENDED: 'The run has ended: it takes no more messages.',
  ERR_RUN_MESSAGES_LIMIT:
    'The run already holds 20 messages it has not taken: send this one once it has taken some.',
};

/** A message the API did not take, in words: the run ended, holds too many, is gone, or the API's own message. */
export function steerRefusalText(failure: unknown): string {
  const { status, code, message } = (typeof failure === 'object' && failure !== null ? failure : {}) as {
    status?: unknown;
    code?: unknown;
    message?: unknown;
  };
  const known = status === 409 && typeof code === 'string' ? CONFLICTS[code] : undefined;
  if (known) return known;
  if (status === 404) return 'This run is gone: it was deleted, or this key may not see it.';
  const said = typeof message === 'string' ? message : String(failure);
  return `The message was not sent: ${said}${typeof code === 'string' ? ` (${code})` : ''}`;
}

/** Where a message is, in words: the timeline's pill. */
export function deliveryText(delivery: MessageDelivery): string {
  switch (delivery.state) {
    case 'pending':
      return 'Pending: the run takes it at its next turn';
    case 'delivered':
      return `Delivered: taken at turn ${delivery.turn}`;
    case 'undelivered':
      return 'Not delivered: the run ended before taking it';
  }
}

/**
 * The messages the run has not taken yet, oldest first: the timeline's pending
 * ones, then those `sent` from this page whose `message.received` has not
 * reached the timeline yet.
 */
export function untakenMessages(items: readonly TimelineItem[], sent: readonly SentMessage[]): SentMessage[] {
  const untaken: SentMessage[] = [];
  const known = new Set<string>();
  for (const item of items) {
    if (item.kind !== 'user') continue;
    known.add(item.messageId);
    if (item.delivery.state === 'pending') untaken.push({ messageId: item.messageId, content: item.content });
  }
  return [...untaken, ...sent.filter((message) => !known.has(message.messageId))];
}
