import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Run, RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { ACME, BETA, build, endRun, expectServing, replayRun, submit, suspend } from './helper.js';

describe('POST /v1/runs', () => {
  it('answers 202 with the id, links and a read token, and the run is queued', async () => {
    const { app } = await build();
    const response = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: replayRun(),
    });
    expect(response.statusCode).toBe(202);
    const body = response.json<{ id: string; status: string; links: object; token: string }>();
    expect(body.id).toMatch(/^run_[0-9a-z]{26}$/);
    expect(body).toEqual({
      id: body.id,
      status: 'queued',
      links: { self: `/v1/runs/${body.id}`, events: `/v1/runs/${body.id}/events` },
      token: expect.stringMatching(/^acme\.\d+\./),
    });
    expect(response.headers.location).toBe(`/v1/runs/${body.id}`);
    const run = await app.inject({ method: 'GET', url: `/v1/runs/${body.id}`, headers: ACME });
    expect(run.json<Run>()).toMatchObject({ id: body.id, status: 'queued', attempts: 0, todos: [] });
    expect(await app.runs.getJob(body.id)).toBeDefined();
  });

  it('replays the same run for the same Idempotency-Key and body, and refuses another body (409)', async () => {
    const { app } = await build();
    const post = (headers: Record<string, string>, payload: object) =>
      app.inject({ method: 'POST', url: '/v1/runs', headers, payload });
    const key = { ...ACME, 'idempotency-key': 'order-42' };
    const first = await post(key, replayRun(undefined, { metadata: { a: 1, b: 2 } }));
    // The same body with its fields in another order is the same body.
    const again = await post(key, { metadata: { b: 2, a: 1 }, ...replayRun() });
    expect(first.statusCode).toBe(202);
    expect(again.statusCode).toBe(202);
    expect(again.json<{ id: string }>().id).toBe(first.json<{ id: string }>().id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();

    const conflict = await post(key, replayRun([{ content: 'other' }]));
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json()).toEqual({
      error: { code: 'ERR_IDEMPOTENCY_CONFLICT', message: expect.any(String) },
    });

    // Keys are per tenant: beta's "order-42" is its own.
    const beta = await post({ ...BETA, 'idempotency-key': 'order-42' }, replayRun([{ content: 'other' }]));
    expect(beta.statusCode).toBe(202);
    expect(beta.json<{ id: string }>().id).not.toBe(first.json<{ id: string }>().id);
    const listed = await app.inject({ method: 'GET', url: '/v1/runs', headers: ACME });
    expect(listed.json<{ data: Run[] }>().data).toHaveLength(1);
  });

  it('refuses an Idempotency-Key that is not printable ASCII', async () => {
    const { app } = await build();
    const response = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...ACME, 'idempotency-key': 'a'.repeat(300) },
      payload: replayRun(),
    });
    expect(response.statusCode).toBe(400);
  });
});

describe('GET /v1/runs and /v1/runs/:id', () => {
  it("lists the caller's runs newest first, by pages and by status", async () => {
    const { app } = await build();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await submit(app));
    await submit(app, BETA);
    await app.inject({ method: 'POST', url: `/v1/runs/${ids[1]}/cancel`, headers: ACME });

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/v1/runs?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await app.inject({ method: 'GET', url, headers: ACME })).json<{
        data: Run[];
        nextCursor: string | null;
      }>();
      seen.push(...page.data.map((run) => run.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(seen).toEqual([...ids].reverse());

    const cancelled = await app.inject({ method: 'GET', url: '/v1/runs?status=cancelled', headers: ACME });
    expect(cancelled.json<{ data: Run[] }>().data.map((run) => run.id)).toEqual([ids[1]]);
  });

  it('shows a run without its tenant, spec or internal fields', async () => {
    const { app } = await build();
    const id = await submit(
      app,
      ACME,
      replayRun(undefined, { metadata: { ticket: 'T-1' }, files: { 'a.txt': 'x' } }),
    );
    const run = (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<
      Record<string, unknown>
    >();
    expect(run.metadata).toEqual({ ticket: 'T-1' });
    for (const field of ['tenant', 'spec', 'owner', 'bodyHash', 'cancelRequested'])
      expect(run).not.toHaveProperty(field);
  });

  it('answers 404 for a run id that does not exist', async () => {
    const { app } = await build();
    const response = await app.inject({
      method: 'GET',
      url: '/v1/runs/run_0000000000000000000000000a',
      headers: ACME,
    });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: { code: 'ERR_RUN_NOT_FOUND', message: expect.any(String) } });
  });
});

describe('POST /v1/runs/:id/clarify/:requestId', () => {
  it('accepts the first answer (200), refuses a second (409) and an unknown request (404)', async () => {
    const { app } = await build();
    const id = await submit(app);
    const requestId = await suspend(app, id);
    const waiting = (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>();
    expect(waiting.status).toBe('waiting_for_input');
    expect(waiting.pendingClarify).toMatchObject({ requestId, question: 'Which one?', choices: ['a', 'b'] });

    const answer = (text: string, request = requestId) =>
      app.inject({
        method: 'POST',
        url: `/v1/runs/${id}/clarify/${request}`,
        headers: ACME,
        payload: { answer: text },
      });
    const first = await answer('a');
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({ ok: true });
    const second = await answer('b');
    expect(second.statusCode).toBe(409);
    expect(second.json<{ error: { code: string } }>().error.code).toBe('ERR_CLARIFY_ALREADY_ANSWERED');
    const unknown = await answer('a', 'clr_0000000000000000000000000a');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json<{ error: { code: string } }>().error.code).toBe('ERR_CLARIFY_UNKNOWN');

    const page = await app.inject({
      method: 'GET',
      url: `/v1/runs/${id}/events`,
      headers: { ...ACME, accept: 'application/json' },
    });
    const answered = page
      .json<{ data: RunEvent[] }>()
      .data.filter((event) => event.type === 'clarify.answered');
    expect(answered.map((event) => event.data)).toEqual([{ requestId, answer: 'a' }]);
    const run = (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>();
    expect(run.status).toBe('queued');
    expect(run.pendingClarify).toBeUndefined();
  });

  it('answers 409 once the question expired or the run ended', async () => {
    const { app } = await build();
    const expired = await submit(app);
    const expiredRequest = await suspend(app, expired, -1);
    const late = await app.inject({
      method: 'POST',
      url: `/v1/runs/${expired}/clarify/${expiredRequest}`,
      headers: ACME,
      payload: { answer: 'a' },
    });
    expect(late.statusCode).toBe(409);
    expect(late.json<{ error: { code: string } }>().error.code).toBe('ERR_CLARIFY_EXPIRED');

    const ended = await submit(app);
    const endedRequest = await suspend(app, ended);
    await app.inject({ method: 'POST', url: `/v1/runs/${ended}/cancel`, headers: ACME });
    const after = await app.inject({
      method: 'POST',
      url: `/v1/runs/${ended}/clarify/${endedRequest}`,
      headers: ACME,
      payload: { answer: 'a' },
    });
    expect(after.statusCode).toBe(409);
    expect(after.json<{ error: { code: string } }>().error.code).toBe('ERR_CLARIFY_NOT_PENDING');
  });
});

describe('POST /v1/runs/:id/cancel', () => {
  it('cancels a queued run (202 with the status before) and refuses a finished one (409)', async () => {
    const { app } = await build();
    const id = await submit(app);
    const cancel = () => app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: ACME });
    const first = await cancel();
    expect(first.statusCode).toBe(202);
    expect(first.json()).toEqual({ id, status: 'queued' });
    const run = (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>();
    expect(run.status).toBe('cancelled');
    expect(await app.runs.getJob(id)).toBeUndefined();
    const again = await cancel();
    expect(again.statusCode).toBe(409);
    expect(again.json<{ error: { code: string } }>().error.code).toBe('ERR_RUN_FINISHED');
  });

  it('asks a running run to stop (202, status running) and refuses a completed run (409)', async () => {
    const { app } = await build();
    const running = await submit(app);
    await app.store.claim(running, 'w:1', 1, 'w');
    const stop = await app.inject({ method: 'POST', url: `/v1/runs/${running}/cancel`, headers: ACME });
    expect(stop.json()).toEqual({ id: running, status: 'running' });
    expect((await app.store.get(running))?.cancelRequested).toBe(true);

    const done = await submit(app);
    await endRun(app, done, { status: 'completed', output: 'ok' });
    const refused = await app.inject({ method: 'POST', url: `/v1/runs/${done}/cancel`, headers: ACME });
    expect(refused.statusCode).toBe(409);
  });
});

describe('GET /v1/runs/:id/events with Accept: application/json', () => {
  it('pages through the log after a cursor, and ends with a null cursor after the terminal event', async () => {
    const { app } = await build();
    const id = await submit(app);
    // The claim appends run.started and attempt.started.
    await app.store.claim(id, 'w:1', 1, 'w');
    for (let i = 0; i < 3; i++)
      await app.store.append(id, { type: 'message.delta', data: { text: `t${i}` } }, 'w:1');
    const page = async (after?: string) => {
      const query = after ? `&after=${after}` : '';
      const response = await app.inject({
        method: 'GET',
        url: `/v1/runs/${id}/events?limit=3${query}`,
        headers: { ...ACME, accept: 'application/json' },
      });
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      return response.json<{ data: RunEvent[]; nextCursor: string | null }>();
    };
    const first = await page();
    expect(first.data.map((event) => event.type)).toEqual(['run.queued', 'run.started', 'attempt.started']);
    const second = await page(first.nextCursor ?? undefined);
    expect(second.data.map((event) => event.type)).toEqual([
      'message.delta',
      'message.delta',
      'message.delta',
    ]);
    const third = await page(second.nextCursor ?? undefined);
    // Caught up on a live run: no events, the same cursor to poll again.
    expect(third).toEqual({ data: [], nextCursor: second.nextCursor });

    await endRun(app, id, { status: 'completed', output: 'done' });
    const last = await page(second.nextCursor ?? undefined);
    expect(last.data.map((event) => event.type)).toEqual(['run.completed']);
    expect(last.nextCursor).toBeNull();
    expect((await page(last.data[0]?.id)).nextCursor).toBeNull();
    // Events carry their whole shape, exactly as stored.
    expect(first.data[0]).toEqual({
      id: expect.any(String),
      runId: id,
      type: 'run.queued',
      at: expect.any(String),
      data: {},
    });
  });
});

describe('files', () => {
  it('lists and downloads what the run left in its workspace, confined to it', async () => {
    const { app, config } = await build();
    const id = await submit(app);
    const empty = await app.inject({ method: 'GET', url: `/v1/runs/${id}/files`, headers: ACME });
    expect(empty.json()).toEqual({ files: [], truncated: false });

    const root = join(config.workspaceRoot, id);
    await mkdir(join(root, 'src', 'deep'), { recursive: true });
    await writeFile(join(root, 'README.md'), '# hi\n');
    await writeFile(join(root, 'src', 'deep', 'main.ts'), 'export {};\n');
    await writeFile(join(config.workspaceRoot, 'secret.txt'), 'outside');
    await symlink(join(config.workspaceRoot, 'secret.txt'), join(root, 'leak.txt'));
    await symlink('/etc', join(root, 'etc'));

    const list = await app.inject({ method: 'GET', url: `/v1/runs/${id}/files`, headers: ACME });
    expect(list.json()).toEqual({
      files: [
        { path: 'README.md', size: 5 },
        { path: 'src/deep/main.ts', size: 11 },
      ],
      truncated: false,
    });

    const file = await app.inject({
      method: 'GET',
      url: `/v1/runs/${id}/files/src/deep/main.ts`,
      headers: ACME,
    });
    expect(file.statusCode).toBe(200);
    expect(file.body).toBe('export {};\n');
    expect(file.headers['content-type']).toBe('application/octet-stream');
    expect(file.headers['content-disposition']).toContain('filename="main.ts"');

    for (const path of [
      'leak.txt',
      'etc/passwd',
      '..%2Fsecret.txt',
      'src%2F..%2F..%2Fsecret.txt',
      '%2Fetc%2Fpasswd',
    ]) {
      const response = await app.inject({
        method: 'GET',
        url: `/v1/runs/${id}/files/${path}`,
        headers: ACME,
      });
      expect(response.statusCode, path).toBe(400);
      expect(response.json<{ error: { code: string } }>().error.code).toBe('ERR_FILE_PATH_INVALID');
      expect(response.body).not.toContain(config.workspaceRoot);
    }
    for (const path of ['missing.txt', 'src', 'src/deep']) {
      const response = await app.inject({
        method: 'GET',
        url: `/v1/runs/${id}/files/${path}`,
        headers: ACME,
      });
      expect(response.statusCode, path).toBe(404);
      expect(response.json<{ error: { code: string } }>().error.code).toBe('ERR_FILE_NOT_FOUND');
    }
  });

  it('answers 400 for a download path with a name over 255 bytes or longer than 4,096 bytes, never 500', async () => {
    const { app, config } = await build();
    const id = await submit(app);
    await mkdir(join(config.workspaceRoot, id, 'docs'), { recursive: true });
    await writeFile(join(config.workspaceRoot, id, 'docs', 'a.txt'), 'a\n');
    const download = (path: string) =>
      app.inject({ method: 'GET', url: `/v1/runs/${id}/files/${path}`, headers: ACME });
    for (const [path, why] of [
      ['a'.repeat(256), 'name of 256 bytes'],
      [`docs/${'b'.repeat(300)}/a.txt`, 'name of 300 bytes'],
      [encodeURIComponent('\u00e9'.repeat(128)), 'name of 256 bytes'],
      [`${'docs/'.repeat(820)}a.txt`, '4105 bytes long'],
    ] as const) {
      const response = await download(path);
      expect(response.statusCode, why).toBe(400);
      const { error } = response.json<{ error: { code: string; message: string } }>();
      expect(error.code).toBe('ERR_FILE_PATH_INVALID');
      expect(error.message).toContain(why);
      expect(error.message.length).toBeLessThan(300);
    }
    // At the limits: a 255-byte name and a 4,096-byte path are looked for (and not there).
    for (const path of ['c'.repeat(255), `${'docs/'.repeat(818)}a.txt.`]) {
      expect((await download(path)).statusCode).toBe(404);
    }
    expect((await download('docs/a.txt')).body).toBe('a\n');
    await expectServing(app);
  });
});

describe('service routes', () => {
  it('GET /v1/tools lists the available toolsets and their tools with JSON Schemas', async () => {
    const { app } = await build();
    const response = await app.inject({ method: 'GET', url: '/v1/tools', headers: ACME });
    expect(response.statusCode).toBe(200);
    const catalog = response.json<{
      toolsets: string[];
      defaultToolsets: string[];
      tools: { name: string; toolset: string; parameters: { type: string } }[];
    }>();
    expect(catalog.toolsets).toEqual(['base', 'planning', 'interaction', 'memory', 'skill', 'crew']);
    expect(catalog.defaultToolsets).toEqual(['base', 'planning', 'interaction']);
    expect(catalog.tools.map((tool) => tool.name).sort()).toEqual(
      [
        'bash',
        'clarify',
        'list_dir',
        'patch',
        'read_file',
        'todo',
        'write_file',
        'memory_save',
        'memory_recall',
        'read_skill',
        'read_skill_file',
        'skill_manage',
        'delegate_task',
        'delegate_parallel',
        'escalate',
      ].sort(),
    );
    expect(catalog.tools.find((tool) => tool.name === 'read_file')).toMatchObject({
      toolset: 'base',
      parameters: { type: 'object', properties: { path: { type: 'string' } } },
    });
    expect((await app.inject({ method: 'GET', url: '/v1/tools' })).statusCode).toBe(401);
  });

  it('GET /v1/models names the profiles and the default, never a key or a base URL', async () => {
    const profiles = JSON.stringify([
      { name: 'fast', provider: 'openai', baseURL: 'http://user:pw@10.0.0.5:8000/v1', apiKey: 'sk-secret-1' },
      { name: 'deep', provider: 'anthropic', model: 'claude-test', apiKey: 'sk-ant-secret-2' },
    ]);
    const { app } = await build({
      env: { TETHER_MODEL_PROFILES: profiles, TETHER_DEFAULT_MODEL_PROFILE: 'deep' },
    });
    const response = await app.inject({ method: 'GET', url: '/v1/models', headers: BETA });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      profiles: [
        { name: 'fast', provider: 'openai', model: null, default: false },
        { name: 'deep', provider: 'anthropic', model: 'claude-test', default: true },
      ],
      defaultProfile: 'deep',
      replay: true,
    });
    expect(response.body).not.toMatch(/secret|10\.0\.0\.5|pw/);
    expect((await app.inject({ method: 'GET', url: '/v1/models' })).statusCode).toBe(401);

    // No model at all: the client can tell before it submits, and the submit says the same.
    const bare = await build({ env: { TETHER_ALLOW_REPLAY: '0' } });
    const none = await bare.app.inject({ method: 'GET', url: '/v1/models', headers: ACME });
    expect(none.json()).toEqual({ profiles: [], defaultProfile: null, replay: false });
    const refused = await bare.app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: { input: 'x' },
    });
    expect(refused.json()).toMatchObject({ error: { code: 'ERR_MODEL_PROFILE_REQUIRED' } });
  });

  it('/healthz and /readyz answer without a key; readyz turns 503 without Redis', async () => {
    const { app } = await build();
    expect((await app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({
      status: 'ok',
      workers: [],
    });

    const down = await build({ env: { REDIS_URL: 'redis://127.0.0.1:1' } });
    expect((await down.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const ready = await down.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json<{ error: { code: string } }>().error.code).toBe('ERR_NOT_READY');
  });

  it('/metrics exposes queue depth, runs by status, SSE clients and HTTP latency', async () => {
    // It adds a delayed job with no run behind it, for the gauges: not a state the checker accepts.
    const { app } = await build({ checkAtEnd: false });
    await submit(app);
    await submit(app);
    // A suspended run is a delayed job.
    await app.runs.queues[0]?.add('run', { runId: 'run_0000000000000000000000000a' }, { delay: 60_000 });
    await app.inject({ method: 'GET', url: '/v1/runs', headers: ACME });
    const response = await app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    const text = response.body;
    expect(text).toContain('tether_queue_jobs{state="waiting"} 2');
    expect(text).toContain('tether_queue_jobs{state="delayed"} 1');
    expect(text).toContain('tether_queue_jobs{state="active"} 0');
    expect(text).toContain('tether_runs{status="queued"} 2');
    expect(text).toContain('tether_runs{status="waiting_for_input"} 1');
    expect(text).toContain('tether_runs_waiting_for_input 1');
    expect(text).toContain('tether_sse_clients 0');
    expect(text).toContain('tether_runs_submitted_total{created="true"} 2');
    expect(text).toMatch(
      /tether_http_request_duration_seconds_count\{method="GET",route="\/v1\/runs",status_code="200"\} 1/,
    );
  });

  it('/openapi.json documents every route, and /docs serves Swagger UI', async () => {
    const { app } = await build();
    const spec = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{
      openapi: string;
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    }>();
    expect(spec.openapi).toBe('3.1.0');
    const routes = Object.entries(spec.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m} ${path}`),
    );
    expect(routes.sort()).toEqual(
      [
        'get /healthz',
        'get /readyz',
        'get /v1/runs',
        'post /v1/runs',
        'get /v1/runs/{id}',
        'post /v1/runs/{id}/cancel',
        'delete /v1/runs/{id}',
        'patch /v1/runs/{id}',
        'post /v1/runs/{id}/retry',
        'get /v1/runs/{id}/events',
        'post /v1/runs/{id}/clarify/{requestId}',
        'post /v1/runs/{id}/tool-outputs/{requestId}',
        'post /v1/runs/{id}/approvals/{requestId}',
        'post /v1/runs/{id}/messages',
        'get /v1/runs/{id}/files',
        'get /v1/runs/{id}/files/{path}',
        'get /v1/sessions',
        'post /v1/sessions',
        'get /v1/sessions/{id}',
        'delete /v1/sessions/{id}',
        'post /v1/sessions/{id}/runs',
        'get /v1/sessions/{id}/messages',
        'get /v1/sessions/{id}/events',
        'get /v1/skills',
        'get /v1/skills/{name}',
        'put /v1/skills/{name}',
        'delete /v1/skills/{name}',
        'get /v1/tools',
        'get /v1/models',
        'get /v1/memory/{scope}',
        'post /v1/memory/{scope}',
        'delete /v1/memory/{scope}',
        'delete /v1/memory/{scope}/{id}',
        'get /v1/mcp-servers',
        'post /v1/mcp-servers',
        'get /v1/mcp-servers/{name}',
        'delete /v1/mcp-servers/{name}',
        'post /v1/webhooks',
        'get /v1/webhooks',
        'get /v1/webhooks/{id}',
        'patch /v1/webhooks/{id}',
        'delete /v1/webhooks/{id}',
        'post /v1/webhooks/{id}/rotate-secret',
        'get /v1/webhooks/{id}/deliveries',
        'post /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver',
        'get /v1/approval-policy',
        'put /v1/approval-policy',
        'delete /v1/approval-policy',
        'get /v1/budgets',
        'put /v1/budgets',
        'delete /v1/budgets',
        'get /v1/usage',
        'post /v1/batches',
        'get /v1/batches/{id}',
        'post /v1/batches/{id}/cancel',
        'post /v1/schedules',
        'get /v1/schedules',
        'get /v1/schedules/{name}',
        'patch /v1/schedules/{name}',
        'delete /v1/schedules/{name}',
        'post /v1/schedules/{name}/pause',
        'post /v1/schedules/{name}/resume',
        'post /v1/schedules/{name}/trigger',
        'get /v1/schedules/{name}/runs',
      ].sort(),
    );
    expect(Object.keys(spec.paths['/v1/runs']?.post?.responses ?? {})).toEqual(
      expect.arrayContaining(['202', '400', '401', '402', '409', '413', '415', '429']),
    );
    const docs = await app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toMatch(/text\/html/);
  });
});
