import { createHmac } from 'node:crypto';

/**
 * The Standard Webhooks signature of a message (https://www.standardwebhooks.com):
 * HMAC-SHA256 over `<id>.<timestamp>.<body>`, keyed with the base64 part of a
 * `whsec_` secret, as `v1,<base64>`. Receivers verify it with any Standard
 * Webhooks library (the tests use the `standardwebhooks` npm package).
 */
export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const digest = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${digest}`;
}

/** The headers of one attempt: the message id, the time of the attempt, and its signature. */
export function webhookHeaders(
  secret: string,
  id: string,
  body: string,
  nowMs = Date.now(),
): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': 'Tether-Webhooks/1',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature(secret, id, timestamp, body),
  };
}

/**
 * A `clarify.requested` payload with its answer token: the dispatcher put
 * `answer` last, without the token (kept sealed beside the payload).
 */
export function withAnswerToken(payload: string, token: string): string {
  const at = payload.lastIndexOf('"answer":{');
  if (at < 0) return payload;
  const inside = at + '"answer":{'.length;
  return `${payload.slice(0, inside)}"token":${JSON.stringify(token)},${payload.slice(inside)}`;
}
