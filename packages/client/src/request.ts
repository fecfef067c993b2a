/** What a request is, shared by the client and its sub-resources (sessions, memory, skills, ...). */

/** Options every call accepts. */
export interface RequestOptions {
  signal?: AbortSignal;
}

export interface SubmitOptions extends RequestOptions {
  /**
   * Sent as `Idempotency-Key`: the same key with the same body returns the same
   * run. When retries are on and no key is given, the client makes one, so a
   * retried submit never creates a second run.
   */
  idempotencyKey?: string;
}

/** One request as the client sends it (internal: `sessions.ts` sends through it). */
export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | undefined> | undefined;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** Safe to send twice: a GET, or a POST with an idempotency key. */
  idempotent: boolean;
  /** Streams: the timeout ends when the response starts, and the client does not retry. */
  stream?: boolean;
}
