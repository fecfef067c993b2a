/**
 * `DELETE /v1/runs/:id`, `POST /v1/runs/:id/retry` and `GET /v1/runs?metadata.<key>=<value>`
 * in process (runs moved through their states as a worker would), and a retried run completed
 * by a worker process.
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Run } from '@tether/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, BETA, build, endRun, expectServing, replayRun, submit, suspend } from './helper.js';
import { deployment, startWorker, stopAll } from './processes.js';

afterEach(stopAll);

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

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

describe('POST /v1/runs/:id/retry', () => {
  it('starts a failed run again as a new run with its spec, files and retryOf; refuses other statuses and tenants', async () => {
    const { app } = await build();
    const body = replayRun(undefined, { files: { 'a.txt': 'original' }, metadata: { team: 'a' } });
    const id = await submit(app, ACME, body);
    const retry = (runId: string, headers: Record<string, string> = ACME) =>
      app.inject({ method: 'POST', url: `/v1/runs/${runId}/retry`, headers });

    const queued = await retry(id);
    expect(queued.statusCode).toBe(409);
    expect(queued.json()).toEqual({
      error: { code: 'ERR_RUN_NOT_RETRYABLE', message: expect.stringContaining('is queued') },
    });
    // As a worker does: the files written, moved out of the spec, then the run fails.
    const spec = (await app.store.get(id))?.spec;
    await app.store.claim(id, 'w:1', 1, 'w');
    await app.store.dropFiles(id, spec as NonNullable<typeof spec>);
    expect((await app.store.get(id))?.spec?.files).toBeUndefined();
    await endRun(app, id, { status: 'failed', error: { code: 'ERR_X', message: 'broke' } }, 'w:1');
    expect((await retry(id, BETA)).statusCode).toBe(404);

    const retried = await retry(id);
    expect(retried.statusCode).toBe(202);
    const created = retried.json<{ id: string; status: string; token: string }>();
    expect(created).toMatchObject({ status: 'queued', token: expect.any(String) });
    expect(created.id).not.toBe(id);
    expect(retried.headers.location).toBe(`/v1/runs/${created.id}`);
    const read = await app.inject({ method: 'GET', url: `/v1/runs/${created.id}`, headers: ACME });
    expect(read.json<Run>()).toMatchObject({
      id: created.id,
      status: 'queued',
      retryOf: id,
      metadata: { team: 'a' },
    });
    expect((await app.store.get(created.id))?.spec).toEqual(body);
    expect(await app.runs.getJob(created.id)).toBeDefined();
    // The old run is left as it was.
    expect(
      (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>(),
    ).toMatchObject({
      status: 'failed',
    });
    expect(
      (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>().retryOf,
    ).toBeUndefined();
    // A queued retry is no failed run.
    expect((await retry(created.id)).statusCode).toBe(409);
    await expectServing(app);
  });

  it('honours an Idempotency-Key: the same run again is the same retry, another run with the key is 409', async () => {
    const { app } = await build();
    const [first, second] = [await submit(app), await submit(app)];
    for (const id of [first, second])
      await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: ACME });
    const post = (runId: string) =>
      app.inject({
        method: 'POST',
        url: `/v1/runs/${runId}/retry`,
        headers: { ...ACME, 'idempotency-key': 'retry-1' },
      });
    const a = await post(first);
    const b = await post(first);
    expect(a.statusCode).toBe(202);
    expect(b.statusCode).toBe(202);
    expect(b.json<{ id: string }>().id).toBe(a.json<{ id: string }>().id);
    expect(b.headers['idempotent-replayed']).toBe('true');
    const other = await post(second);
    expect(other.statusCode).toBe(409);
    expect(other.json<{ error: { code: string } }>().error.code).toBe('ERR_IDEMPOTENCY_CONFLICT');
    const listed = await expectServing(app);
    expect(listed.filter((id) => id !== first && id !== second)).toEqual([a.json<{ id: string }>().id]);
    const bad = await app.inject({
      method: 'POST',
      url: `/v1/runs/${first}/retry`,
      headers: { ...ACME, 'idempotency-key': 'a'.repeat(300) },
    });
    expect(bad.statusCode).toBe(400);
  });

  it('a retried run completes on a worker, in a fresh workspace with the original files', async () => {
    const shared = await deployment('retry');
    const { app } = await build({
      env: { TETHER_QUEUE_PREFIX: shared.prefix, TETHER_WORKSPACE_ROOT: shared.workspaceRoot },
    });
    const id = await submit(
      app,
      ACME,
      replayRun([{ content: 'done again' }], { files: { 'a.txt': 'original' } }),
    );
    const spec = (await app.store.get(id))?.spec;
    await app.store.claim(id, 'w:1', 1, 'w');
    await app.store.dropFiles(id, spec as NonNullable<typeof spec>);
    await mkdir(join(shared.workspaceRoot, id), { recursive: true });
    await writeFile(join(shared.workspaceRoot, id, 'a.txt'), 'changed by the failed run');
    await app.store.finalize(id, { status: 'failed', error: { code: 'ERR_X', message: 'broke' } }, 'w:1');

    const retried = await app.inject({ method: 'POST', url: `/v1/runs/${id}/retry`, headers: ACME });
    const newId = retried.json<{ id: string }>().id;
    await startWorker(shared);
    const deadline = Date.now() + 30_000;
    let run: Run;
    for (;;) {
      run = (await app.inject({ method: 'GET', url: `/v1/runs/${newId}`, headers: ACME })).json<Run>();
      if (['completed', 'failed', 'cancelled'].includes(run.status) || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(run).toMatchObject({ status: 'completed', output: 'done again', retryOf: id });
    expect(await readFile(join(shared.workspaceRoot, newId, 'a.txt'), 'utf8')).toBe('original');
    expect(await readFile(join(shared.workspaceRoot, id, 'a.txt'), 'utf8')).toBe('changed by the failed run');
  });
});

describe('GET /v1/runs?metadata.<key>=<value>', () => {
  it("pages through the caller's runs with every pair, and refuses a malformed filter naming the field", async () => {
    const { app } = await build();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        await submit(
          app,
          ACME,
          replayRun(undefined, { metadata: { team: 'a b', env: i < 3 ? 'prod' : 'dev' } }),
        ),
      );
    }
    await submit(app, ACME, replayRun(undefined, { metadata: { team: 'other' } }));
    await submit(app, BETA, replayRun(undefined, { metadata: { team: 'a b', env: 'prod' } }));
    const list = (query: string, headers: Record<string, string> = ACME) =>
      app.inject({ method: 'GET', url: `/v1/runs?${query}`, headers });

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await list(
        `metadata.team=a%20b&metadata.env=prod&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.statusCode).toBe(200);
      const body = page.json<{ data: Run[]; nextCursor: string | null }>();
      expect(body.data.length).toBeLessThanOrEqual(2);
      for (const run of body.data) expect(run.metadata).toMatchObject({ team: 'a b', env: 'prod' });
      seen.push(...body.data.map((run) => run.id));
      cursor = body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids.slice(0, 3).reverse());
    const beta = (await list('metadata.team=a%20b', BETA)).json<{ data: Run[] }>().data;
    expect(beta).toHaveLength(1);
    expect(ids).not.toContain(beta[0]?.id);

    const refused = async (query: string, field: string) => {
      const response = await list(query);
      expect(response.statusCode).toBe(400);
      const { error } = response.json<{ error: { code: string; message: string } }>();
      expect(error.code).toBe('ERR_VALIDATION');
      expect(error.message).toContain(field);
    };
    await refused(`metadata.${'k'.repeat(129)}=x`, 'querystring.metadata.k');
    await refused('metadata.=x', 'querystring.metadata.');
    await refused(`metadata.team=${'v'.repeat(257)}`, 'querystring.metadata.team');
    await refused('metadata.team=a&metadata.team=b', 'querystring.metadata.team');
    await refused(
      Array.from({ length: 9 }, (_, i) => `metadata.k${i}=v`).join('&'),
      'at most 8 metadata.<key> filters',
    );
    expect(await expectServing(app)).toHaveLength(6);
  });

  it('refuses a key that is not a plain name (400 naming it and the rule), and filters by the others', async () => {
    const { app } = await build();
    const named = await submit(
      app,
      ACME,
      replayRun(undefined, { metadata: { 'team.name': 'a', constructor: 'x', 'a b': 'x' } }),
    );
    const other = await submit(app, ACME, replayRun(undefined, { metadata: { team: 'b', toString: 'x' } }));
    const list = (query: string) => app.inject({ method: 'GET', url: `/v1/runs?${query}`, headers: ACME });
    // `__proto__` once set the filter's prototype, leaving no filter: the tenant's whole list.
    for (const key of ['__proto__', 'a b', 'a:b', 'a/b', 'é', 'a\u0000b', 'a[b]', 'x=y']) {
      const response = await list(`metadata.${encodeURIComponent(key)}=x`);
      const { error } = response.json<{ error?: { code: string; message: string } }>();
      expect([key, response.statusCode, error?.code]).toEqual([key, 400, 'ERR_VALIDATION']);
      expect(error?.message).toContain(`querystring.metadata.${key}:`);
      expect(error?.message).toContain('A-Z, a-z, 0-9');
    }
    const ids = async (query: string) => {
      const response = await list(query);
      expect(response.statusCode).toBe(200);
      return response.json<{ data: Run[] }>().data.map((run) => run.id);
    };
    expect(await ids('metadata.team.name=a')).toEqual([named]);
    expect(await ids('metadata.constructor=x')).toEqual([named]);
    expect(await ids('metadata.toString=x')).toEqual([other]);
    expect(await ids('metadata.team=b&metadata.toString=x')).toEqual([other]);
    expect(await ids('metadata.hasOwnProperty=x')).toEqual([]);
    expect(await expectServing(app)).toEqual([other, named]);
  });
});
