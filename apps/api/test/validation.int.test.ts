import { uniquePrefix } from '@tether/testing';
import { describe, expect, it } from 'vitest';
import { loadApiConfig } from '../src/config.js';
import { ACME, BETA, build, expectServing, replayRun, submit } from './helper.js';

const json = { 'content-type': 'application/json' };

function errorOf(response: { statusCode: number; json: <T>() => T }) {
  return {
    status: response.statusCode,
    ...response.json<{ error: { code: string; message: string } }>().error,
  };
}

describe('authentication', () => {
  it('answers 401 without a key, with a wrong key, and with a malformed header, all alike', async () => {
    const { app } = await build();
    const bodies = new Set<string>();
    for (const headers of [
      {},
      { authorization: 'Bearer sk_wrong_0123456789' },
      { authorization: 'Basic YWNtZTpzZWNyZXQ=' },
      { authorization: `Bearer ${ACME.authorization.slice(7)}x` },
    ]) {
      const response = await app.inject({ method: 'GET', url: '/v1/runs', headers });
      expect(errorOf(response)).toMatchObject({ status: 401, code: 'ERR_UNAUTHORIZED' });
      expect(response.headers['www-authenticate']).toBe('Bearer');
      bodies.add(response.body);
    }
    // A caller learns nothing from the answer about what was wrong with its credentials.
    expect(bodies.size).toBe(1);
    expect((await app.inject({ method: 'GET', url: '/v1/runs', headers: ACME })).statusCode).toBe(200);
  });

  it('answers 429 with Retry-After past TETHER_AUTH_FAIL_LIMIT failed authentications from one address', async () => {
    const { app } = await build({
      // Windows are aligned to the clock: an hour's makes a window change during the test unlikely.
      env: { TETHER_AUTH_FAIL_LIMIT: '3', TETHER_AUTH_FAIL_WINDOW_MS: '3600000' },
    });
    const from = (remoteAddress: string, headers: Record<string, string> = {}, url = '/v1/runs') =>
      app.inject({ method: 'GET', url, headers, remoteAddress });
    const id = await submit(app);
    // Requests that authenticate are not counted.
    for (let i = 0; i < 5; i++) expect((await from('10.0.0.1', ACME)).statusCode).toBe(200);
    // Three failures of every kind (none, a wrong key, a wrong read token) are 401...
    for (const [headers, url] of [
      [{}, '/v1/runs'],
      [{ authorization: 'Bearer sk_wrong_0123456789' }, '/v1/runs'],
      [{ accept: 'application/json' }, `/v1/runs/${id}/events?token=acme.1.forged`],
    ] as const) {
      expect(errorOf(await from('10.0.0.1', headers, url)), url).toMatchObject({ status: 401 });
    }
    // ...and past them, a missing and a wrong key get the same 429, until the window ends.
    const limited = [
      await from('10.0.0.1', { authorization: 'Bearer sk_wrong_0123456789' }),
      await from('10.0.0.1'),
    ];
    for (const response of limited) {
      expect(errorOf(response)).toMatchObject({ status: 429, code: 'ERR_AUTH_RATE_LIMITED' });
      expect(errorOf(response).message).toContain('at most 3 per 3600 s');
      expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(response.headers['retry-after'])).toBeLessThanOrEqual(3600);
    }
    expect(limited[0]?.body).toBe(limited[1]?.body);
    // A valid key from that address is refused too (a 200 would tell a guesser it found the key),
    // and other addresses have their own count.
    expect(errorOf(await from('10.0.0.1', ACME))).toMatchObject({
      status: 429,
      code: 'ERR_AUTH_RATE_LIMITED',
    });
    expect((await from('10.0.0.2', ACME)).statusCode).toBe(200);
    expect(errorOf(await from('10.0.0.2'))).toMatchObject({ status: 401, code: 'ERR_UNAUTHORIZED' });
    expect(await expectServing(app)).toEqual([id]);
  });

  it("answers 404 for another tenant's run, on every run route", async () => {
    const { app } = await build();
    const id = await submit(app, ACME);
    const requestId = 'clr_0000000000000000000000000a';
    for (const [method, url, payload] of [
      ['GET', `/v1/runs/${id}`, undefined],
      ['GET', `/v1/runs/${id}/events`, undefined],
      ['POST', `/v1/runs/${id}/cancel`, undefined],
      ['POST', `/v1/runs/${id}/clarify/${requestId}`, { answer: 'a' }],
      ['GET', `/v1/runs/${id}/files`, undefined],
      ['GET', `/v1/runs/${id}/files/a.txt`, undefined],
    ] as const) {
      const response = await app.inject({
        method,
        url,
        headers: { ...BETA, accept: 'application/json' },
        payload,
      });
      expect(errorOf(response), `${method} ${url}`).toMatchObject({ status: 404, code: 'ERR_RUN_NOT_FOUND' });
    }
    const listed = await app.inject({ method: 'GET', url: '/v1/runs', headers: BETA });
    expect(listed.json()).toEqual({ data: [], nextCursor: null });
    expect((await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).statusCode).toBe(200);
  });

  it('accepts the read token on the events route only, for its own run only, until it expires', async () => {
    const { app } = await build({ env: { TETHER_TOKEN_TTL_S: '60' } });
    const first = await app.inject({ method: 'POST', url: '/v1/runs', headers: ACME, payload: replayRun() });
    const { id, token } = first.json<{ id: string; token: string }>();
    const other = await submit(app, ACME);
    const page = (runId: string, query: string) =>
      app.inject({
        method: 'GET',
        url: `/v1/runs/${runId}/events?${query}`,
        headers: { accept: 'application/json' },
      });

    const ok = await page(id, `token=${encodeURIComponent(token)}`);
    expect(ok.statusCode).toBe(200);
    expect(ok.json<{ data: { type: string }[] }>().data[0]?.type).toBe('run.queued');
    expect(errorOf(await page(other, `token=${encodeURIComponent(token)}`)).status).toBe(401);
    expect(errorOf(await page(id, `token=${encodeURIComponent(`${token.slice(0, -2)}AA`)}`)).status).toBe(
      401,
    );
    expect(errorOf(await page(id, '')).status).toBe(401);
    // Not a key: the token opens nothing but the events route.
    const asKey = await app.inject({
      method: 'GET',
      url: `/v1/runs/${id}?token=${encodeURIComponent(token)}`,
    });
    expect(asKey.statusCode).toBe(401);
    // Expired: a token issued an hour ago with a 60 s lifetime.
    const expired = app.readTokens.issue(id, 'acme', Date.now() - 3_600_000);
    expect(errorOf(await page(id, `token=${encodeURIComponent(expired)}`)).status).toBe(401);
    // Signed for another tenant: the signature covers the tenant.
    const forged = token.replace(/^acme\./, 'beta.');
    expect(errorOf(await page(id, `token=${encodeURIComponent(forged)}`)).status).toBe(401);
  });

  it('without keys, every caller is the default tenant', async () => {
    const { app, config } = await build({ keys: '', env: { HOST: '0.0.0.0' } });
    expect(config.host).toBe('127.0.0.1');
    const id = await submit(app, {});
    const response = await app.inject({
      method: 'GET',
      url: `/v1/runs/${id}`,
      headers: { authorization: 'Bearer whatever' },
    });
    expect(response.statusCode).toBe(200);
  });
});

describe('request validation', () => {
  it('answers 400 for malformed JSON', async () => {
    const { app } = await build();
    const response = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...ACME, ...json },
      payload: '{"input": "x",',
    });
    expect(errorOf(response)).toMatchObject({ status: 400, code: 'ERR_INVALID_JSON' });
  });

  it('answers 415 for a body that is not JSON', async () => {
    const { app } = await build();
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const response = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: { ...ACME, 'content-type': type },
        payload: 'input=x',
      });
      expect(errorOf(response), type).toMatchObject({
        status: 415,
        code: 'ERR_UNSUPPORTED_MEDIA_TYPE',
        message: `The request body must be JSON: send Content-Type: application/json (this request sent Content-Type: ${type}).`,
      });
    }
    const untyped = await app.inject({ method: 'POST', url: '/v1/runs', headers: ACME, payload: 'input=x' });
    expect(errorOf(untyped)).toMatchObject({
      status: 415,
      message:
        'The request body must be JSON: send Content-Type: application/json (this request sent no Content-Type).',
    });
    expect(await expectServing(app)).toEqual([]);
  });

  it('answers 413 for a body over the limit, and takes one just under it', async () => {
    const { app } = await build({ env: { TETHER_BODY_LIMIT: '4096' } });
    const big = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...ACME, ...json },
      payload: JSON.stringify(replayRun(undefined, { metadata: { pad: 'x'.repeat(5_000) } })),
    });
    expect(errorOf(big)).toMatchObject({ status: 413, code: 'ERR_BODY_TOO_LARGE' });
    const small = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...ACME, ...json },
      payload: JSON.stringify(replayRun(undefined, { metadata: { pad: 'x'.repeat(3_000) } })),
    });
    expect(small.statusCode).toBe(202);
  });

  it('answers 413 at 1 MiB by default', async () => {
    const { app } = await build();
    const response = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...ACME, ...json },
      payload: JSON.stringify(replayRun(undefined, { files: { 'a.txt': 'x'.repeat(1_048_576) } })),
    });
    expect(errorOf(response)).toMatchObject({ status: 413, code: 'ERR_BODY_TOO_LARGE' });
  });

  it('answers 400 naming an unknown field, at any depth, never dropping it', async () => {
    const { app } = await build();
    for (const [body, field] of [
      [{ ...replayRun(), colour: 'blue' }, 'body.colour'],
      [{ ...replayRun(), limits: { maxSteps: 3, maxTokens: 9 } }, 'body.limits.maxTokens'],
      [{ ...replayRun(), clarify: { timeoutMs: 5_000, retries: 1 } }, 'body.clarify.retries'],
    ] as const) {
      const response = await app.inject({ method: 'POST', url: '/v1/runs', headers: ACME, payload: body });
      const error = errorOf(response);
      expect(error).toMatchObject({ status: 400, code: 'ERR_VALIDATION' });
      expect(error.message).toContain(field);
    }
    const answer = await app.inject({
      method: 'POST',
      url: `/v1/runs/${await submit(app)}/clarify/clr_0000000000000000000000000a`,
      headers: ACME,
      payload: { answer: 'a', extra: true },
    });
    expect(errorOf(answer)).toMatchObject({ status: 400, code: 'ERR_VALIDATION' });
  });

  it('answers 400 for a string where a number is expected (no coercion), and for other wrong types', async () => {
    const { app } = await build();
    for (const [body, field] of [
      [replayRun(undefined, { limits: { maxSteps: '3' as unknown as number } }), 'body.limits.maxSteps'],
      [
        replayRun(undefined, { clarify: { timeoutMs: '5000' as unknown as number } }),
        'body.clarify.timeoutMs',
      ],
      [{ ...replayRun(), input: 42 }, 'body.input'],
      [{ ...replayRun(), toolsets: 'base' }, 'body.toolsets'],
      [{ model: { provider: 'replay', script: [{ content: 'ok' }] } }, 'body.input'],
      [replayRun(undefined, { limits: { maxSteps: 1_001 } }), 'body.limits.maxSteps'],
    ] as const) {
      const response = await app.inject({ method: 'POST', url: '/v1/runs', headers: ACME, payload: body });
      const error = errorOf(response);
      expect(error, JSON.stringify(body)).toMatchObject({ status: 400, code: 'ERR_VALIDATION' });
      expect(error.message).toContain(field);
    }
    const empty = await app.inject({ method: 'POST', url: '/v1/runs', headers: { ...ACME, ...json } });
    expect(errorOf(empty)).toMatchObject({ status: 400, code: 'ERR_VALIDATION' });
  });

  it('answers 400 for JSON nested deeper than TETHER_JSON_MAX_DEPTH (64), without a stack overflow', async () => {
    const { app } = await build();
    const before = await expectServing(app);
    // A body nested `depth` levels deep in all: the body, metadata, then arrays.
    const nested = (depth: number) =>
      `{"input":"x","model":{"provider":"replay","script":[{"content":"ok"}]},"metadata":{"a":${'['.repeat(depth - 2)}${']'.repeat(depth - 2)}}}`;
    const post = (payload: string) =>
      app.inject({ method: 'POST', url: '/v1/runs', headers: { ...ACME, ...json }, payload });
    for (const depth of [65, 5_000, 100_000]) {
      const error = errorOf(await post(nested(depth)));
      expect(error, `depth ${depth}`).toMatchObject({ status: 400, code: 'ERR_JSON_TOO_DEEP' });
      expect(error.message).toContain('more than 64 levels');
    }
    // Brackets in strings are text, not nesting.
    const inString = await post(
      JSON.stringify(replayRun(undefined, { metadata: { text: '['.repeat(5_000) } })),
    );
    expect(inString.statusCode).toBe(202);
    const atLimit = await post(nested(64));
    expect(atLimit.statusCode).toBe(202);
    const after = await expectServing(app);
    expect(after.length).toBe(before.length + 2);
  });

  it('takes JSON as deep as TETHER_JSON_MAX_DEPTH allows, up to its maximum of 1,000', async () => {
    const { app } = await build({ env: { TETHER_JSON_MAX_DEPTH: '1000' } });
    const nested = (depth: number) =>
      `{"input":"x","model":{"provider":"replay","script":[{"content":"ok"}]},"metadata":{"a":${'['.repeat(depth - 2)}${']'.repeat(depth - 2)}}}`;
    const post = (payload: string) =>
      app.inject({ method: 'POST', url: '/v1/runs', headers: { ...ACME, ...json }, payload });
    // Everything that handles the body (validation, idempotency, the store) copes with the deepest allowed.
    const id = (await post(nested(1_000))).json<{ id: string }>().id;
    const run = await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME });
    expect(run.statusCode).toBe(200);
    expect(errorOf(await post(nested(1_001)))).toMatchObject({ status: 400, code: 'ERR_JSON_TOO_DEEP' });
    expect(() => loadApiConfig({ TETHER_JSON_MAX_DEPTH: '1001' })).toThrow(/TETHER_JSON_MAX_DEPTH/);
    await expectServing(app);
  });

  it('answers 400 for __proto__ and constructor.prototype in a body', async () => {
    const { app } = await build();
    for (const payload of [
      '{"input":"x","__proto__":{"admin":true}}',
      '{"input":"x","metadata":{"a":{"__proto__":{"polluted":1}}}}',
      '{"input":"x","metadata":{"constructor":{"prototype":{"polluted":1}}}}',
    ]) {
      const response = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: { ...ACME, ...json },
        payload,
      });
      expect(errorOf(response), payload).toMatchObject({ status: 400, code: 'ERR_FORBIDDEN_PROPERTY' });
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('answers 400 for a path parameter that is not an id', async () => {
    const { app } = await build();
    const id = await submit(app);
    for (const [method, url] of [
      ['GET', '/v1/runs/nope'],
      ['GET', '/v1/runs/run_short'],
      ['GET', '/v1/runs/RUN_01M8MK437DK0REDCD4HSEZF61X'],
      ['GET', `/v1/runs/${id.replace('run_', 'run_u')}`],
      ['GET', '/v1/runs/%20/events'],
      ['POST', '/v1/runs/1/cancel'],
      ['POST', `/v1/runs/${id}/clarify/not-a-request`],
      ['GET', '/v1/runs/x/files'],
    ] as const) {
      const response = await app.inject({
        method,
        url,
        headers: ACME,
        ...(method === 'POST' ? { payload: { answer: 'a' } } : {}),
      });
      expect(errorOf(response), url).toMatchObject({ status: 400, code: 'ERR_VALIDATION' });
    }
  });

  it('says what a malformed id or name should look like, never the pattern it fails', async () => {
    const { app } = await build();
    const id = await submit(app);
    for (const [method, url, body, message] of [
      ['GET', '/v1/runs/run_nope', undefined, 'params.id is not a run id (run ids look like run_'],
      [
        'POST',
        `/v1/runs/${id}/clarify/nope`,
        { answer: 'a' },
        "params.requestId is not a question's request id",
      ],
      ['GET', '/v1/sessions/ses_x', undefined, 'params.id is not a session id (session ids look like ses_'],
      ['GET', `/v1/runs/${id}/events?after=yesterday`, undefined, 'querystring.after is not an event id'],
      ['PUT', '/v1/skills/Not_A_Name', { content: 'x' }, 'params.name is not a skill name'],
      [
        'POST',
        '/v1/runs',
        { input: 'x', model: { profile: 'a b' } },
        'body.model.profile is not a model profile name',
      ],
      [
        'POST',
        '/v1/mcp-servers',
        { name: 'wiki', url: 'https://mcp.example.com/', headers: { 'bad header': 'x' } },
        'body.headers key "bad header" is not an HTTP header name',
      ],
    ] as const) {
      const response = await app.inject({ method, url, headers: ACME, ...(body ? { payload: body } : {}) });
      const error = errorOf(response);
      expect(error, url).toMatchObject({ status: 400, code: 'ERR_VALIDATION' });
      expect(error.message, url).toContain(message);
      // Not the regular expression: no character class, no anchor before one.
      expect(error.message, url).not.toMatch(/must match|\[0-9|\^\[|\{26\}/);
    }
    // The server is fine afterwards.
    expect((await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).statusCode).toBe(200);
  });

  it('answers 400 for a bad query string or header, coercing numbers there only', async () => {
    const { app } = await build();
    const id = await submit(app);
    const bad = [
      '/v1/runs?limit=0',
      '/v1/runs?limit=abc',
      '/v1/runs?status=sleeping',
      '/v1/runs?cursor=x',
      `/v1/runs/${id}/events?after=yesterday`,
      `/v1/runs/${id}/events?limit=5000`,
    ];
    for (const url of bad) {
      const response = await app.inject({
        method: 'GET',
        url,
        headers: { ...ACME, accept: 'application/json' },
      });
      expect(errorOf(response), url).toMatchObject({ status: 400, code: 'ERR_VALIDATION' });
    }
    // A query string's union of literals lists its values as a body's does.
    const status = await app.inject({ method: 'GET', url: '/v1/runs?status=sleeping', headers: ACME });
    expect(errorOf(status).message).toMatch(
      /^querystring\.status must be one of "scheduled", "queued", "running", /,
    );
    const badHeader = await app.inject({
      method: 'GET',
      url: `/v1/runs/${id}/events`,
      headers: { ...ACME, 'last-event-id': 'abc' },
    });
    expect(errorOf(badHeader)).toMatchObject({ status: 400, code: 'ERR_VALIDATION' });
    expect((await app.inject({ method: 'GET', url: '/v1/runs?limit=5', headers: ACME })).statusCode).toBe(
      200,
    );
  });

  it('answers 400 for an event id beyond the Redis stream id range, in ?after= and Last-Event-ID', async () => {
    const { app } = await build();
    const id = await submit(app);
    const page = (query: string, headers: Record<string, string> = {}) =>
      app.inject({
        method: 'GET',
        url: `/v1/runs/${id}/events${query}`,
        headers: { ...ACME, accept: 'application/json', ...headers },
      });
    const max = '18446744073709551615';
    for (const cursor of [
      '18446744073709551616-0',
      '0-18446744073709551616',
      '99999999999999999999-99999999999999999999',
    ]) {
      for (const [response, field] of [
        [await page(`?after=${cursor}`), 'querystring.after'],
        [await page('', { 'last-event-id': cursor }), 'headers.last-event-id'],
      ] as const) {
        const error = errorOf(response);
        expect(error, `${field} ${cursor}`).toMatchObject({ status: 400, code: 'ERR_VALIDATION' });
        expect(error.message).toContain(field);
        expect(error.message).toContain('out of range');
      }
    }
    // The largest id is an id: nothing follows it.
    const last = await page(`?after=${max}-${max}`);
    expect(last.statusCode).toBe(200);
    expect(last.json()).toEqual({ data: [], nextCursor: `${max}-${max}` });
    expect((await page('')).json<{ data: unknown[] }>().data).toHaveLength(1);
    await expectServing(app);
  });

  it('answers 400 for unknown toolsets, refused model specs and files outside the workspace', async () => {
    const { app } = await build({
      env: {
        TETHER_MODEL_PROFILES:
          '[{"name":"fast","provider":"openai","baseURL":"http://127.0.0.1:9/v1","model":"m"}]',
      },
    });
    const cases: [object, string, string][] = [
      [
        replayRun(undefined, { toolsets: ['base', 'browser'] }),
        'ERR_TOOLSET_UNKNOWN',
        'base, planning, interaction, memory, skill, crew',
      ],
      [replayRun(undefined, { toolsets: ['wizardry'] }), 'ERR_TOOLSET_UNKNOWN', 'wizardry'],
      [{ input: 'x', model: { profile: 'slow' } }, 'ERR_MODEL_PROFILE_UNKNOWN', 'fast'],
      [replayRun(undefined, { files: { '../escape.txt': 'x' } }), 'ERR_FILES_INVALID', 'outside'],
      [replayRun(undefined, { files: { '/etc/passwd': 'x' } }), 'ERR_FILES_INVALID', 'absolute'],
      [
        replayRun(undefined, { files: { [`src/${'n'.repeat(256)}.ts`]: 'x' } }),
        'ERR_FILES_INVALID',
        'longer than 255 bytes',
      ],
      [
        { input: 'x', model: { provider: 'replay', script: [{ toolCalls: [] }] } },
        'ERR_MODEL_REPLAY_SCRIPT_INVALID',
        'body.model.script[0].toolCalls (turn 0)',
      ],
    ];
    for (const [body, code, text] of cases) {
      const response = await app.inject({ method: 'POST', url: '/v1/runs', headers: ACME, payload: body });
      const error = errorOf(response);
      expect(error, JSON.stringify(body)).toMatchObject({ status: 400, code });
      expect(error.message).toContain(text);
    }
    const profile = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: { input: 'x', model: { profile: 'fast' } },
    });
    expect(profile.statusCode).toBe(202);
  });

  it('answers ERR_MODEL_REPLAY_SCRIPT_INVALID naming the turn and the field of a malformed replay script', async () => {
    const { app } = await build();
    const turns = (bad: object) => [{ toolCalls: [{ name: 'todo', arguments: {} }] }, { content: 'a' }, bad];
    const cases: [object, string][] = [
      [
        { provider: 'replay', script: turns({ toolCalls: [{ name: '', arguments: {} }] }) },
        'Invalid replay script: body.model.script[2].toolCalls[0].name (turn 2) is wrong: expected string length greater or equal to 1.',
      ],
      [
        { provider: 'replay', script: turns({ toolCalls: [{ name: 'a', arguments: [] }] }) },
        'body.model.script[2].toolCalls[0].arguments (turn 2) is wrong: expected object',
      ],
      [
        { provider: 'replay', script: turns({ content: 'x', colour: 'blue' }) },
        'body.model.script[2].colour (turn 2) is not a known field',
      ],
      [
        { provider: 'replay', script: turns({ text: 'x' }) },
        'body.model.script[2].content (turn 2) is required',
      ],
      [{ provider: 'replay', script: [] }, 'body.model.script has 0 turns; a script has 1 to 1000.'],
      [{ provider: 'replay' }, 'body.model.script is required'],
      [{ provider: 'replay', script: [{ content: 'x' }], seed: 1 }, 'body.model.seed is not a known field'],
      [
        { provider: 'replay', script: [{ content: 'x' }], children: [{ script: turns({ content: 1 }) }] },
        'body.model.children[0].script[2].content (turn 2) is wrong: expected string',
      ],
    ];
    for (const [model, message] of cases) {
      const response = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: ACME,
        payload: { input: 'x', model },
      });
      const error = errorOf(response);
      expect(error, JSON.stringify(model)).toMatchObject({
        status: 400,
        code: 'ERR_MODEL_REPLAY_SCRIPT_INVALID',
      });
      expect(error.message, JSON.stringify(model)).toContain(message);
      if (message.includes('(turn ')) expect(error.message).toContain('Each turn is');
    }
    // A profile's model spec is told as before.
    const profile = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: { input: 'x', model: { profile: 'fast', colour: 1 } },
    });
    expect(errorOf(profile)).toMatchObject({ status: 400, code: 'ERR_VALIDATION' });
    expect(await expectServing(app)).toEqual([]);
  });

  it('refuses replay runs when TETHER_ALLOW_REPLAY is off', async () => {
    const { app } = await build({ env: { TETHER_ALLOW_REPLAY: '0' } });
    const response = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: replayRun(),
    });
    expect(errorOf(response)).toMatchObject({ status: 400, code: 'ERR_MODEL_REPLAY_DISABLED' });
  });

  it('answers 404 with an error body for unknown routes', async () => {
    const { app } = await build();
    for (const [method, url] of [
      ['GET', '/v2/runs'],
      // A wrong method on a path that exists is 405 (conventions.int.test.ts).
      ['DELETE', '/v2/runs'],
      // `/` itself redirects to the console (console.int.test.ts).
      ['GET', '/v1/nope'],
    ] as const) {
      const response = await app.inject({ method, url, headers: ACME });
      expect(errorOf(response), url).toMatchObject({ status: 404, code: 'ERR_NOT_FOUND' });
    }
  });
});

describe('rate limiting', () => {
  it('answers 429 with Retry-After past the limit, per tenant', async () => {
    const { app } = await build({
      // Windows are aligned to the clock: an hour's makes a window change during the test unlikely.
      env: { TETHER_RATE_LIMIT_MAX: '3', TETHER_RATE_LIMIT_WINDOW_MS: '3600000' },
    });
    for (let i = 0; i < 3; i++) {
      const response = await app.inject({ method: 'GET', url: '/v1/runs', headers: ACME });
      expect(response.statusCode).toBe(200);
    }
    const limited = await app.inject({ method: 'GET', url: '/v1/runs', headers: ACME });
    expect(errorOf(limited)).toMatchObject({ status: 429, code: 'ERR_RATE_LIMITED' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(3600);
    // Another tenant has its own budget; health checks are not counted.
    expect((await app.inject({ method: 'GET', url: '/v1/runs', headers: BETA })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('shares the budget between API instances (the counts meet in Redis)', async () => {
    const env = {
      TETHER_RATE_LIMIT_MAX: '3',
      TETHER_RATE_LIMIT_WINDOW_MS: '3600000',
      TETHER_RATE_LIMIT_SYNC_MS: '10',
      TETHER_QUEUE_PREFIX: uniquePrefix('rl'),
    };
    const a = await build({ env });
    const b = await build({ env });
    const get = (app: typeof a.app) => app.inject({ method: 'GET', url: '/v1/runs', headers: ACME });
    // Waits until Redis holds `total` requests, and a little more for the last sync's answer.
    const synced = async (total: number) => {
      for (let i = 0; i < 200; i++) {
        const keys = await a.app.redis.keys(`${a.app.keys.namespace}:ratelimit:tenant:acme:*`);
        const counts = await Promise.all(keys.map((key) => a.app.redis.get(key)));
        if (counts.reduce((sum, count) => sum + Number(count), 0) >= total) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await new Promise((resolve) => setTimeout(resolve, 30));
    };
    expect((await get(a.app)).statusCode).toBe(200);
    expect((await get(b.app)).statusCode).toBe(200);
    expect((await get(b.app)).statusCode).toBe(200);
    await synced(3);
    // a has answered one request of its own; what it knows of b's two arrives with its next sync.
    await get(a.app);
    await synced(4);
    const third = await get(a.app);
    expect(errorOf(third)).toMatchObject({ status: 429, code: 'ERR_RATE_LIMITED' });
    expect(third.headers['x-ratelimit-remaining']).toBe('0');
  });
});

describe('request ids', () => {
  it('echoes a sane X-Request-Id, and replaces a long or non-printable one by a random UUID', async () => {
    const { app } = await build();
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const idOf = async (sent?: string) => {
      const response = await app.inject({
        method: 'GET',
        url: '/v1/runs',
        headers: { ...ACME, ...(sent === undefined ? {} : { 'x-request-id': sent }) },
      });
      expect(response.statusCode).toBe(200);
      return response.headers['x-request-id'];
    };
    expect(await idOf('trace-42')).toBe('trace-42');
    expect(await idOf('x'.repeat(128))).toBe('x'.repeat(128));
    for (const sent of ['x'.repeat(129), 'two words', 'caf\u00e9', 'a\u007f']) {
      const id = await idOf(sent);
      expect(id, sent).toMatch(uuid);
    }
    const generated = [await idOf(), await idOf()];
    expect(generated[0]).toMatch(uuid);
    expect(generated[1]).not.toBe(generated[0]);
    await expectServing(app);
  });
});
