/**
 * Session-scoped tokens, for browsers: `POST /v1/sessions` answers one. It
 * reads the session, its transcript and events and its runs, sends messages
 * (runs of the session) and answers their questions, as `?token=` or
 * `Authorization: Bearer`, and on the WebSocket gateway. It cannot list,
 * create or delete sessions, nor reach any other session or run.
 *
 * A token is `<sessionId>.<tenant>.<expiry>.<signature>`: `expiry` in Unix
 * seconds (the session's retention from its creation) and the signature an
 * HMAC-SHA256 (base64url) over `session.<sessionId>.<tenant>.<expiry>`, with
 * the secret of the run read tokens. Nothing is stored; every API instance
 * with the same secret accepts every other's tokens.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { runSessionTag, sessionTag } from '@tether/protocol';
import { ApiError } from './errors.js';

/**
 * The run fields a session token may not set in a message: they decide what
 * the run reaches (the tools, the memory scope, servers) or costs, so they
 * come from the session's defaults, which only an API key sets. A browser
 * holding the token would otherwise read another scope's memory, or change
 * the tenant's skills.
 */
export const KEY_ONLY_RUN_FIELDS = ['toolsets', 'memory', 'limits', 'mcpServers'] as const;

/** Refuses a message body sent with a session token that sets a {@link KEY_ONLY_RUN_FIELDS} field. */
export function checkSessionTokenBody(body: object): void {
  const set = KEY_ONLY_RUN_FIELDS.filter((field) => Object.hasOwn(body, field));
  if (set.length === 0) return;
  throw new ApiError(
    'ERR_SESSION_TOKEN_FIELD',
    `A session token cannot set ${set.join(', ')}: the session's defaults decide ${set.length > 1 ? 'them' : 'it'}, and only an API key sets those (POST /v1/sessions). Send the message without ${set.length > 1 ? 'them' : 'it'}.`,
  );
}

const TOKEN = /^(ses_[0-9a-z]{26})\.([A-Za-z0-9_-]{1,64})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/;

export interface SessionTokenIssuer {
  issue(sessionId: string, tenant: string, nowMs?: number): string;
  /** The session and tenant of a valid, unexpired token; otherwise undefined. */
  verify(token: string, nowMs?: number): { sessionId: string; tenant: string } | undefined;
}

export function createSessionTokens(secret: Buffer, ttlSeconds: number): SessionTokenIssuer {
  const sign = (sessionId: string, tenant: string, expiry: string) =>
    createHmac('sha256', secret).update(`session.${sessionId}.${tenant}.${expiry}`).digest();
  return {
    issue(sessionId, tenant, nowMs = Date.now()) {
      const expiry = String(Math.floor(nowMs / 1000) + ttlSeconds);
      return `${sessionId}.${tenant}.${expiry}.${sign(sessionId, tenant, expiry).toString('base64url')}`;
    },
    verify(token, nowMs = Date.now()) {
      const match = TOKEN.exec(token);
      if (!match) return undefined;
      const [, sessionId, tenant, expiry, signature] = match as unknown as [
        string,
        string,
        string,
        string,
        string,
      ];
      const given = Buffer.from(signature, 'base64url');
      const expected = sign(sessionId, tenant, expiry);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      if (Number(expiry) * 1000 <= nowMs) return undefined;
      return { sessionId, tenant };
    },
  };
}

/** Whether a session token of `sessionId` covers the resource `id` of a URL: the session itself, or one of its runs. */
export function sessionTokenCovers(sessionId: string, id: unknown): boolean {
  if (typeof id !== 'string') return false;
  return id === sessionId || runSessionTag(id) === sessionTag(sessionId);
}
