/**
 * `DELETE /v1/runs/:id`, `POST /v1/runs/:id/retry` and `GET /v1/runs?metadata.<key>=<value>`
 * in process (runs moved through their states as a worker would), and a retried run completed
 * by a worker process.
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Run } from '@tether/protocol';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, BETA, build, expectServing, replayRun, submit, suspend } from './helper.js';
import { deployment, startWorker, stopAll } from './processes.js';

afterEach(stopAll);

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

/** Ends a queued run as a worker would: claims it, then fails it. */
async function fail(app: FastifyInstance, runId: string): Promise<void> {
  const claimed = await app.store.claim(runId, 'w:1', 1, 'w');
  if (claimed.status !== 'ok') throw new Error(`claim answered ${claimed.status}`);
  await app.store.finalize(runId, { status: 'failed', error: { code: 'ERR_X', message: 'broke' } }, 'w:1');
}

describe('DELETE /v1/runs/:id', () => {
  it('refuses an active run (409), then removes the record, events, workspace and list entry once ended', async () => {
    const { app, config } = await build();
    const id = await submit(app);
    const workspace = join(config.workspaceRoot, id);
    await mkdir(workspace, { recursive: true });
    await writeFile(join(workspace, 'notes.txt'), 'left by the run');

    const del = () => app.inject({ method: 'DELETE', url: `/v1/runs/${id}`, headers: ACME });
    const queued = await del();
    expect(queued.statusCode).toBe(409);
    expect(queued.json()).toEqual({
      error: { code: 'ERR_RUN_ACTIVE', message: expect.stringContaining('(queued)') },
    });
    await suspend(app, id);
    expect((await del()).json<{ error: { message: string } }>().error.message).toContain('waiting_for_input');
    expect(await exists(workspace)).toBe(true);

    // Another tenant's is unknown, before and after it ends.
    const beta = await app.inject({ method: 'DELETE', url: `/v1/runs/${id}`, headers: BETA });
    expect(beta.statusCode).toBe(404);

    await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: ACME });
    const deleted = await del();
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    expect((await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).statusCode).toBe(404);
    const events = await app.inject({
      method: 'GET',
      url: `/v1/runs/${id}/events`,
      headers: { ...ACME, accept: 'application/json' },
    });
    expect(events.statusCode).toBe(404);
    expect(await app.store.readEvents(id)).toEqual([]);
    expect(await exists(workspace)).toBe(false);
    expect(await expectServing(app)).not.toContain(id);
    expect((await del()).statusCode).toBe(404);
  });

  it("refuses a session's run (409 naming DELETE /v1/sessions/:id) and a malformed id (400)", async () => {
    const { app } = await build();
    const session = await app.inject({ method: 'POST', url: '/v1/sessions', headers: ACME, payload: {} });
    const sessionId = session.json<{ id: string }>().id;
    const sent = await app.inject({
      method: 'POST',
      url: `/v1/sessions/${sessionId}/runs`,
      headers: ACME,
      payload: replayRun(),
    });
    const runId = sent.json<{ id: string }>().id;
    await app.inject({ method: 'POST', url: `/v1/runs/${runId}/cancel`, headers: ACME });
    const refused = await app.inject({ method: 'DELETE', url: `/v1/runs/${runId}`, headers: ACME });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({
      error: {
        code: 'ERR_RUN_IN_SESSION',
        message: expect.stringContaining(`DELETE /v1/sessions/${sessionId}`),
      },
    });
    const bad = await app.inject({ method: 'DELETE', url: '/v1/runs/not-a-run', headers: ACME });
    expect(bad.statusCode).toBe(400);
    await expectServing(app);
  });
});
