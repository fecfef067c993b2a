import { describe, expect, it } from 'vitest';
import { expireWaitpoint } from '../../src/runs/commands/scripts.js';
import {
  parseMessage,
  QUESTION_ID,
  questionWaitpoint,
  type RequestKind,
  RunFixture,
  type SeededRequest,
  useRedis,
} from './fixture.js';

const redis = useRedis();
const OWNER = 'w1:t1';
const LATER = Date.now() + 3_600_000;
const PAST = Date.now() - 1_000;

function expire(run: RunFixture, id: string, requestIds: string[], token = OWNER) {
  return expireWaitpoint.run(redis, { keys: run.keys, args: { ...run.base, token, id, requestIds } });
}

/** A run owned by OWNER (running unless `status`) that waits on waitpoint `id` of `kind` with `requests`. */
async function waiting(
  id: string,
  kind: RequestKind,
  deadline: number,
  requests: SeededRequest[],
  status = 'running',
): Promise<RunFixture> {
  const run = new RunFixture(redis);
  await run.seed({ status, owner: OWNER });
  await run.seedWaitpoint({ id, kind, deadline, requests });
  return run;
}

/** A run owned by OWNER, running, with the test's question in `state`, due at `deadline`. */
async function asked(deadline: number, state = 'pending', result?: string): Promise<RunFixture> {
  const run = new RunFixture(redis);
  await run.seed({ status: 'running', owner: OWNER });
  await run.seedWaitpoint(questionWaitpoint(deadline, state, result));
  return run;
}

const requests = (...states: [id: string, state: string, result?: string][]) =>
  states.map(
    ([id, state, result]): SeededRequest => (result === undefined ? { id, state } : { id, state, result }),
  );
const output = (text: string, isError = false) => JSON.stringify({ output: text, isError });

describe('expireWaitpoint: a question', () => {
  it('gives the deadline of a question still pending, and changes nothing (whoever asks)', async () => {
    const run = await asked(LATER);
    expect(await run.unchanged(() => expire(run, QUESTION_ID, [QUESTION_ID]))).toEqual([
      'pending',
      String(LATER),
    ]);
    expect(await run.unchanged(() => expire(run, QUESTION_ID, [QUESTION_ID], 'w2:t2'))).toEqual([
      'pending',
      String(LATER),
    ]);
  });

  it('gives the answer of an answered question, and changes nothing (past the deadline, whoever asks)', async () => {
    const run = await asked(PAST, 'answered', 'blue');
    expect(await run.unchanged(() => expire(run, QUESTION_ID, [QUESTION_ID]))).toEqual([
      'ready',
      QUESTION_ID,
      'answered',
      'blue',
    ]);
    expect(await run.unchanged(() => expire(run, QUESTION_ID, [QUESTION_ID], 'w2:t2'))).toEqual([
      'ready',
      QUESTION_ID,
      'answered',
      'blue',
    ]);
  });

  it('finds a question that timed out already, and appends nothing more', async () => {
    const run = await asked(PAST, 'timed_out');
    expect(await run.unchanged(() => expire(run, QUESTION_ID, [QUESTION_ID]))).toEqual([
      'ready',
      QUESTION_ID,
      'timed_out',
      '',
    ]);
  });

  it('times out a question past its deadline for the owner: timed_out, none pending, clarify.timed_out', async () => {
    const run = await asked(PAST);
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      expire(run, QUESTION_ID, [QUESTION_ID]),
    );
    expect(result).toEqual(['ready', QUESTION_ID, 'timed_out', '']);
    expect(await run.waitpoint()).toMatchObject({ pending: '0', [`s:${QUESTION_ID}`]: 'timed_out' });
    expect(await redis.exists(run.keys.waitpointResults)).toBe(0);
    // The run goes on in its attempt.
    expect(await run.record()).toEqual({ status: 'running', owner: OWNER });
    const events = await run.appended();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'clarify.timed_out', data: { requestId: QUESTION_ID } },
    ]);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
    // Once: asked again, the same fate and nothing appended.
    expect(await run.unchanged(() => expire(run, QUESTION_ID, [QUESTION_ID]))).toEqual(result);
  });

  it('leaves a question past its deadline to the owner when another worker asks', async () => {
    const run = await asked(PAST);
    expect(await run.unchanged(() => expire(run, QUESTION_ID, [QUESTION_ID], 'w2:t2'))).toEqual([
      'not_owner',
    ]);
  });

  it.each(['queued', 'waiting_for_input', 'completed', 'cancelled'])(
    'leaves a question past its deadline alone when the run is %s, even for its last owner',
    async (status) => {
      const run = await asked(PAST);
      await run.seed({ status });
      expect(await run.unchanged(() => expire(run, QUESTION_ID, [QUESTION_ID]))).toEqual(['not_owner']);
    },
  );
});

describe('expireWaitpoint: client tool calls', () => {
  it('before the deadline with a call still pending: pending, nothing changed', async () => {
    const run = await waiting(
      'tcr_a',
      'tool_output',
      LATER,
      requests(['tcr_a', 'received', output('A')], ['tcr_b', 'pending']),
    );
    expect(await run.unchanged(() => expire(run, 'tcr_a', ['tcr_a', 'tcr_b']))).toEqual([
      'pending',
      String(LATER),
    ]);
  });

  it('with every output in: each call with its state and output, in the order asked, whoever asks', async () => {
    const run = await waiting(
      'tcr_a',
      'tool_output',
      LATER,
      requests(['tcr_a', 'received', output('A')], ['tcr_b', 'received', output('B', true)]),
    );
    const ready = ['ready', 'tcr_a', 'received', output('A'), 'tcr_b', 'received', output('B', true)];
    expect(await run.unchanged(() => expire(run, 'tcr_a', ['tcr_a', 'tcr_b']))).toEqual(ready);
    expect(await run.unchanged(() => expire(run, 'tcr_a', ['tcr_a', 'tcr_b'], 'w9:t9'))).toEqual(ready);
    expect(await expire(run, 'tcr_a', ['tcr_b', 'tcr_a'])).toEqual([
      'ready',
      'tcr_b',
      'received',
      output('B', true),
      'tcr_a',
      'received',
      output('A'),
    ]);
  });

  it('past the deadline, the owner times out each call still pending (tool.timed_out each, in order), once', async () => {
    const run = await waiting(
      'tcr_a',
      'tool_output',
      PAST,
      requests(['tcr_a', 'pending'], ['tcr_b', 'received', output('B')], ['tcr_c', 'pending']),
    );
    expect(await run.unchanged(() => expire(run, 'tcr_a', ['tcr_a', 'tcr_b', 'tcr_c'], 'w9:t9'))).toEqual([
      'not_owner',
    ]);
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      expire(run, 'tcr_a', ['tcr_a', 'tcr_b', 'tcr_c']),
    );
    expect(result).toEqual([
      'ready',
      'tcr_a',
      'timed_out',
      '',
      'tcr_b',
      'received',
      output('B'),
      'tcr_c',
      'timed_out',
      '',
    ]);
    expect(await run.waitpoint()).toMatchObject({
      pending: '0',
      's:tcr_a': 'timed_out',
      's:tcr_b': 'received',
      's:tcr_c': 'timed_out',
    });
    const events = await run.appended();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'tool.timed_out', data: { requestId: 'tcr_a' } },
      { type: 'tool.timed_out', data: { requestId: 'tcr_c' } },
    ]);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
    expect(await run.unchanged(() => expire(run, 'tcr_a', ['tcr_a', 'tcr_b', 'tcr_c']))).toEqual(result);
  });
});

describe('expireWaitpoint: children', () => {
  it('never times a child out: past the deadline a child still pending keeps the waitpoint pending', async () => {
    const run = await waiting(
      'call_1',
      'child',
      PAST,
      requests(['run_child_a', 'reported', '{"status":"completed"}'], ['run_child_b', 'pending']),
    );
    expect(await run.unchanged(() => expire(run, 'call_1', ['run_child_a', 'run_child_b']))).toEqual([
      'pending',
      String(PAST),
    ]);
    expect((await run.waitpoint())['s:run_child_b']).toBe('pending');
  });

  it("gives every child's result once each reported", async () => {
    const run = await waiting(
      'call_1',
      'child',
      PAST,
      requests(
        ['run_child_a', 'reported', '{"status":"completed"}'],
        ['run_child_b', 'reported', '{"status":"failed"}'],
      ),
    );
    expect(await run.unchanged(() => expire(run, 'call_1', ['run_child_a', 'run_child_b']))).toEqual([
      'ready',
      'run_child_a',
      'reported',
      '{"status":"completed"}',
      'run_child_b',
      'reported',
      '{"status":"failed"}',
    ]);
  });
});

describe('expireWaitpoint: a waitpoint moved from the release before (requests in q:)', () => {
  it('times out its question past the deadline, as any other', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: OWNER });
    await run.seedWaitpoint({
      id: QUESTION_ID,
      kind: 'question',
      deadline: PAST,
      requests: [{ id: QUESTION_ID, moved: true }],
    });
    expect(await expire(run, QUESTION_ID, [QUESTION_ID])).toEqual(['ready', QUESTION_ID, 'timed_out', '']);
    expect(await run.waitpoint()).toMatchObject({ pending: '0', [`s:${QUESTION_ID}`]: 'timed_out' });
    expect((await run.events()).map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'clarify.timed_out', data: { requestId: QUESTION_ID } },
    ]);
  });

  it("gives its calls' outputs from the results hash", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: OWNER });
    await run.seedWaitpoint({
      id: 'tcr_a',
      kind: 'tool_output',
      deadline: PAST,
      requests: [
        { id: 'tcr_a', moved: true, state: 'received', result: output('A') },
        { id: 'tcr_b', moved: true, state: 'timed_out' },
      ],
    });
    expect(await run.unchanged(() => expire(run, 'tcr_a', ['tcr_a', 'tcr_b']))).toEqual([
      'ready',
      'tcr_a',
      'received',
      output('A'),
      'tcr_b',
      'timed_out',
      '',
    ]);
  });
});

describe('expireWaitpoint: missing', () => {
  it('finds no waitpoint', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: OWNER });
    expect(await run.unchanged(() => expire(run, QUESTION_ID, [QUESTION_ID]))).toEqual(['missing']);
  });

  it('finds no waitpoint of another id, though its requests are there (past the deadline, for the owner)', async () => {
    const run = await waiting(
      'tcr_b',
      'tool_output',
      PAST,
      requests(['tcr_a', 'pending'], ['tcr_b', 'pending']),
    );
    expect(await run.unchanged(() => expire(run, 'tcr_a', ['tcr_a', 'tcr_b']))).toEqual(['missing']);
  });

  it('finds no request that was never recorded (past the deadline, for the owner or another)', async () => {
    const run = await waiting('tcr_a', 'tool_output', PAST, requests(['tcr_a', 'pending']));
    expect(await run.unchanged(() => expire(run, 'tcr_a', ['tcr_a', 'tcr_x']))).toEqual(['missing']);
    expect(await run.unchanged(() => expire(run, 'tcr_a', ['tcr_x']))).toEqual(['missing']);
    expect(await run.unchanged(() => expire(run, 'tcr_a', ['tcr_a', 'tcr_x'], 'w9:t9'))).toEqual(['missing']);
  });

  it('finds no request without a state, though its event id is recorded', async () => {
    const run = await waiting(
      'tcr_a',
      'tool_output',
      PAST,
      requests(['tcr_a', 'pending'], ['tcr_b', 'pending']),
    );
    await redis.hdel(run.keys.waitpoint, 's:tcr_b');
    expect(await run.waitpoint()).toHaveProperty('e:tcr_b');
    expect(await run.unchanged(() => expire(run, 'tcr_a', ['tcr_a', 'tcr_b']))).toEqual(['missing']);
  });

  it("finds no waitpoint once the run has ended (only the requests' states are left)", async () => {
    const run = await asked(PAST);
    const ended = await run.finalize({ status: 'cancelled' });
    expect(Array.isArray(ended)).toBe(true);
    expect(await run.unchanged(() => expire(run, QUESTION_ID, [QUESTION_ID]))).toEqual(['missing']);
  });
});
