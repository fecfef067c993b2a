/**
 * What the sessions' end-to-end files share (sessions.int.test.ts and
 * sessions-history.int.test.ts): a deployment, sessions created and messages
 * sent over REST, waiting for a run's end, and the transcript read page by
 * page. Each file registers its own `afterEach` that runs `stopAll`, then
 * {@link cleanups}.
 */
import type { Run, Session, TranscriptEntryView } from '@tether/protocol';
import { expect } from 'vitest';
import { call, deployment } from './processes.js';

/** What to undo when the test ends, after its processes are stopped. */
export const cleanups: (() => Promise<void>)[] = [];

export const setup = () => deployment('sessions');

export type Created = Session & { token: string };

export async function createSession(base: string, body?: unknown): Promise<Created> {
  const created = await call<Created>(base, 'POST', '/v1/sessions', body);
  expect(created.status).toBe(201);
  return created.body;
}

export async function send(base: string, sessionId: string, body: Record<string, unknown>): Promise<string> {
  const sent = await call<{ id: string; sessionId: string }>(
    base,
    'POST',
    `/v1/sessions/${sessionId}/runs`,
    body,
  );
  expect(sent.status, JSON.stringify(sent.body)).toBe(202);
  expect(sent.body.sessionId).toBe(sessionId);
  return sent.body.id;
}

export const replay = (...script: unknown[]) => ({ provider: 'replay', script });

export async function until<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export const TERMINAL = ['completed', 'failed', 'cancelled'];

export function runOf(base: string, runId: string): Promise<Run> {
  return until(
    async () => (await call<Run>(base, 'GET', `/v1/runs/${runId}`)).body,
    (run) => TERMINAL.includes(run.status),
    `run ${runId} to end`,
  );
}

export async function messages(base: string, sessionId: string): Promise<TranscriptEntryView[]> {
  const all: TranscriptEntryView[] = [];
  let cursor: string | null = null;
  do {
    const page: { status: number; body: { data: TranscriptEntryView[]; nextCursor: string | null } } =
      await call(
        base,
        'GET',
        `/v1/sessions/${sessionId}/messages?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
    expect(page.status).toBe(200);
    all.push(...page.body.data);
    cursor = page.body.nextCursor;
  } while (cursor);
  return all;
}
