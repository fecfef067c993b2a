/**
 * `tether chat` and `tether eval` ask the server for a model (`GET /v1/models`)
 * before they start anything, through `runCli` against the fake API on a real
 * port; a server older than that route keeps today's behaviour; and the hint
 * under the server's `ERR_MODEL_PROFILE_REQUIRED` names only the flags the
 * failed command has (against a small server that refuses every run).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelCatalog } from '@tether/protocol';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeApi, type FakeRun, type RecordedRequest } from '../testing/fake-api.js';
import { KeyboardInput, RecordingOutput } from '../testing/terminal.js';
import type { CliIo } from './io.js';
import { runCli } from './program.js';

const NO_MODEL: ModelCatalog = { profiles: [], defaultProfile: null, replay: true };
const TWO_PROFILES = [
  { name: 'default', provider: 'openai', model: 'gpt-test', default: true },
  { name: 'fast', provider: 'anthropic', model: null, default: false },
];
const SETUP = ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY', 'restart'];
/** One task of the built-in set, so that an eval that goes on runs one run. */
const ONE_TASK = ['--tasks', 'single-version'];

let api: FakeApi;
let dir: string;
/** A replay script for `--replay`. */
let replayFile: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-model-check-'));
  replayFile = join(dir, 'replay.json');
  await writeFile(replayFile, JSON.stringify([{ content: 'Hello.' }]));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  api = new FakeApi();
  api.keys.set('key-a', 'tenant-a');
  await api.start();
});

afterEach(async () => {
  await api.close();
});

function terminal(baseUrl: string, input = '') {
  const stdout = new RecordingOutput(false);
  const stderr = new RecordingOutput(false);
  const stdin = new KeyboardInput(false);
  stdin.end(input);
  const io: CliIo = {
    stdout,
    stderr,
    stdin,
    env: { TETHER_URL: baseUrl, TETHER_API_KEY: 'key-a', NO_COLOR: '1' },
  };
  return { io, stdout, stderr };
}

const sessionCreates = (requests: readonly RecordedRequest[]) =>
  requests.filter((r) => r.method === 'POST' && r.path === '/v1/sessions');
const runSubmits = (requests: readonly RecordedRequest[]) =>
  requests.filter((r) => r.method === 'POST' && r.path.startsWith('/v1/runs'));
const modelAsks = (requests: readonly RecordedRequest[]) =>
  requests.filter((r) => r.method === 'GET' && r.path === '/v1/models');

function complete(run: FakeRun): void {
  api.append(run.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
  api.append(run.run.id, 'run.completed', { output: 'done' });
}

describe('tether chat checks for a model before it starts', () => {
  it('on a server with no model: says how to configure one, creates no session, exit 1', async () => {
    api.models = NO_MODEL;
    const { io, stderr } = terminal(api.baseUrl, 'hello\n');
    expect(await runCli(['chat'], io)).toBe(1);
    expect(modelAsks(api.requests)).toHaveLength(1);
    expect(sessionCreates(api.requests)).toEqual([]);
    expect(stderr.plain).toContain('No model is configured on this server: tether chat started nothing.');
    for (const word of SETUP) expect(stderr.plain).toContain(word);
    expect(stderr.plain).toContain('--replay <file> plays a scripted model');
  });

  it('mentions --replay only when the server allows it', async () => {
    api.models = { ...NO_MODEL, replay: false };
    const { io, stderr } = terminal(api.baseUrl);
    expect(await runCli(['chat'], io)).toBe(1);
    expect(sessionCreates(api.requests)).toEqual([]);
    expect(stderr.plain).toContain('OPENAI_API_KEY');
    expect(stderr.plain).not.toContain('--replay');
  });

  it('checks before continuing a session too', async () => {
    api.models = NO_MODEL;
    const { io } = terminal(api.baseUrl);
    expect(await runCli(['chat', '--session', 'ses_1'], io)).toBe(1);
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/models']);
  });

  it('refuses a profile the server does not have, listing the known ones, before creating anything', async () => {
    api.models = { profiles: TWO_PROFILES, defaultProfile: 'default', replay: false };
    const { io, stderr } = terminal(api.baseUrl);
    expect(await runCli(['chat', '--model', 'slow'], io)).toBe(1);
    expect(sessionCreates(api.requests)).toEqual([]);
    expect(stderr.plain).toContain('No model profile "slow" on this server (known: default, fast)');
  });

  it('refuses --replay on a server that does not allow it, before creating anything', async () => {
    api.models = { profiles: TWO_PROFILES, defaultProfile: 'default', replay: false };
    const { io, stderr } = terminal(api.baseUrl);
    expect(await runCli(['chat', '--replay', replayFile], io)).toBe(1);
    expect(sessionCreates(api.requests)).toEqual([]);
    expect(stderr.plain).toContain('This server does not allow --replay');
    expect(stderr.plain).toContain('TETHER_ALLOW_REPLAY=true');
  });

  it.each([
    ['the default profile', () => [], { profiles: TWO_PROFILES, defaultProfile: 'default', replay: false }],
    [
      'a known profile',
      () => ['--model', 'fast'],
      { profiles: TWO_PROFILES, defaultProfile: null, replay: false },
    ],
    ['--replay where replay is allowed', () => ['--replay', replayFile], NO_MODEL],
  ])('goes on to create the session with %s', async (_, flags, models) => {
    api.models = models;
    const { io, stderr } = terminal(api.baseUrl);
    // The fake API has no session routes: its 404 shows the chat went on.
    await runCli(['chat', ...flags()], io);
    expect(modelAsks(api.requests)).toHaveLength(1);
    expect(sessionCreates(api.requests)).toHaveLength(1);
    expect(stderr.plain).not.toContain('started nothing');
  });
});

describe('tether eval checks for a model before it starts', () => {
  it('on a server with no model: says how to configure one, runs no task, never mentions --replay', async () => {
    api.models = NO_MODEL;
    api.onSubmit = complete;
    const { io, stdout, stderr } = terminal(api.baseUrl);
    expect(await runCli(['eval', ...ONE_TASK], io)).toBe(1);
    expect(runSubmits(api.requests)).toEqual([]);
    expect(stdout.plain).toBe('');
    expect(stderr.plain).toContain('No model is configured on this server: tether eval started nothing.');
    for (const word of SETUP) expect(stderr.plain).toContain(word);
    expect(stderr.plain).toContain('Then run tether eval again.');
    expect(stderr.plain).not.toContain('--replay');
  });

  it('with profiles but no default: names --model and the known profiles', async () => {
    api.models = { profiles: TWO_PROFILES, defaultProfile: null, replay: true };
    const { io, stderr } = terminal(api.baseUrl);
    expect(await runCli(['eval', ...ONE_TASK], io)).toBe(1);
    expect(runSubmits(api.requests)).toEqual([]);
    expect(stderr.plain).toContain('Name one with --model <profile> (known: default, fast).');
    expect(stderr.plain).not.toContain('--replay');
  });

  it('refuses an unknown --model before running any task', async () => {
    api.models = { profiles: TWO_PROFILES, defaultProfile: 'default', replay: false };
    const { io, stderr } = terminal(api.baseUrl);
    expect(await runCli(['eval', '--model', 'slow', ...ONE_TASK], io)).toBe(1);
    expect(runSubmits(api.requests)).toEqual([]);
    expect(stderr.plain).toContain('No model profile "slow" on this server (known: default, fast)');
  });

  it('runs the tasks when the server has a default profile', async () => {
    api.onSubmit = complete;
    const { io, stderr } = terminal(api.baseUrl);
    expect(await runCli(['eval', ...ONE_TASK], io)).toBe(0);
    expect(modelAsks(api.requests)).toHaveLength(1);
    expect(runSubmits(api.requests)).toHaveLength(1);
    expect(stderr.plain).toBe('');
  });
});

describe('a server older than GET /v1/models (404)', () => {
  beforeEach(() => {
    api.models = undefined;
  });

  it('tether eval runs its tasks as before', async () => {
    api.onSubmit = complete;
    const { io } = terminal(api.baseUrl);
    expect(await runCli(['eval', ...ONE_TASK], io)).toBe(0);
    expect(modelAsks(api.requests)).toHaveLength(1);
    expect(runSubmits(api.requests)).toHaveLength(1);
  });

  it('tether chat creates its session as before', async () => {
    const { io, stderr } = terminal(api.baseUrl);
    await runCli(['chat'], io);
    expect(sessionCreates(api.requests)).toHaveLength(1);
    expect(stderr.plain).not.toContain('started nothing');
  });
});

describe("the server's ERR_MODEL_PROFILE_REQUIRED", () => {
  let older: OlderServer;
  beforeEach(async () => {
    older = await olderServerWithoutModel();
  });
  afterEach(async () => {
    await older.close();
  });

  it.each([
    ['run', ['run', 'x'], '', { model: true, replay: true }],
    ['chat', ['chat'], 'hello\n', { model: true, replay: true }],
    ['eval', ['eval', ...ONE_TASK], '', { model: true, replay: false }],
    ['retry', ['retry', 'run_1'], '', { model: false, replay: false }],
  ])('under tether %s, is printed with a hint naming only its flags', async (_, argv, input, flags) => {
    const { io, stderr } = terminal(older.baseUrl, input);
    expect(await runCli(argv, io)).toBe(1);
    expect(older.refused).toBe(1);
    expect(stderr.plain).toContain(REFUSAL);
    expect(stderr.plain).toContain('Then try again.');
    expect(stderr.plain.includes('--model')).toBe(flags.model);
    expect(stderr.plain.includes('--replay')).toBe(flags.replay);
  });
});

const REFUSAL = 'No model is configured on this server: set OPENAI_API_KEY where the API runs.';

interface OlderServer {
  baseUrl: string;
  /** How many requests it refused with `ERR_MODEL_PROFILE_REQUIRED`. */
  refused: number;
  close(): Promise<void>;
}

/**
 * A server from before `GET /v1/models` (404) with no model: it creates a
 * session and holds its stream open, and refuses every run (a submit, a
 * session's message, a retry) with `ERR_MODEL_PROFILE_REQUIRED`.
 */
async function olderServerWithoutModel(): Promise<OlderServer> {
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const state = { refused: 0 };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const route = `${req.method} ${req.url?.split('?')[0]}`;
      if (route === 'POST /v1/sessions') return send(res, 201, { id: 'ses_1', token: 'tok' });
      if (route === 'GET /v1/sessions/ses_1/events') {
        res.writeHead(200, { 'content-type': 'text/event-stream' }).write(':ok\n\n');
        return;
      }
      if (
        req.method === 'POST' &&
        /^POST \/v1\/(runs|runs\/[^/]+\/retry|sessions\/ses_1\/runs)$/.test(route)
      ) {
        state.refused++;
        return send(res, 400, { error: { code: 'ERR_MODEL_PROFILE_REQUIRED', message: REFUSAL } });
      }
      send(res, 404, { error: { code: 'ERR_NOT_FOUND', message: `No route ${route}.` } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    get refused() {
      return state.refused;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
