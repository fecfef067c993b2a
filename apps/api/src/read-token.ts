/**
 * Run-scoped read tokens, for `EventSource`, which cannot send headers: the
 * events route accepts `?token=` instead of a bearer key.
 *
 * A token is `<tenant>.<expiry>.<signature>`: `expiry` in Unix seconds and the
 * signature an HMAC-SHA256 (base64url) over `<runId>.<tenant>.<expiry>`. The
 * run id is not in the token: it is the run of the URL, so a token opens
 * exactly one run's events, and only until it expires. Nothing is stored;
 * every API instance with the same secret accepts every other's tokens.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const TOKEN = /^([A-Za-z0-9_-]{1,64})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/;

export interface ReadTokenIssuer {
  /** A token for `runId` of `tenant`, valid for the configured lifetime. */
  issue(runId: string, tenant: string, nowMs?: number): string;
  /** The tenant, when `token` is a valid, unexpired token of `runId`; otherwise undefined. */
  verify(token: string, runId: string, nowMs?: number): string | undefined;
}

export function createReadTokens(secret: Buffer, ttlSeconds: number): ReadTokenIssuer {
  const sign = (runId: string, tenant: string, expiry: string) =>
    createHmac('sha256', secret).update(`${runId}.${tenant}.${expiry}`).digest();
  return {
    issue(runId, tenant, nowMs = Date.now()) {
      const expiry = String(Math.floor(nowMs / 1000) + ttlSeconds);
      return `${tenant}.${expiry}.${sign(runId, tenant, expiry).toString('base64url')}`;
    },
    verify(token, runId, nowMs = Date.now()) {
      const match = TOKEN.exec(token);
      if (!match) return undefined;
      const [, tenant, expiry, signature] = match as unknown as [string, string, string, string];
      const given = Buffer.from(signature, 'base64url');
      const expected = sign(runId, tenant, expiry);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      if (Number(expiry) * 1000 <= nowMs) return undefined;
      return tenant;
    },
  };
}
