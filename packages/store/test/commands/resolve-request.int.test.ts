import { describe, expect, it } from 'vitest';
import { expireWaitpoint, resolveRequest } from '../../src/runs/commands/scripts.js';
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
const LATER = Date.now() + 3_600_000;
const CALL = 'call_1';

interface Resolve {
  requestId: string;
  kind: RequestKind;
  result: string;
  eventType: string;
  eventData: string;
  waitpointId?: string;
  tokenHash?: string;
}

function resolve(run: RunFixture, request: Resolve) {
  return resolveRequest.run(redis, {
    keys: run.keys,
    args: {
      ...run.base,
      waitpointId: request.waitpointId ?? '',
      requestId: request.requestId,
      kind: request.kind,
      result: request.result,
      eventType: request.eventType,
      eventData: request.eventData,
      tokenHash: request.tokenHash ?? '',
    },
  });
}

/** An answer to a question, as the API gives it. */
function answer(run: RunFixture, text: string, tokenHash = '', requestId = QUESTION_ID) {
  return resolve(run, {
    requestId,
    kind: 'question',
    result: text,
    eventType: 'clarify.answered',
    eventData: JSON.stringify({ requestId, answer: text }),
    tokenHash,
  });
}

/** A client tool call's output, as the API posts it. */
function post(run: RunFixture, requestId: string, output = 'out', isError = false) {
  return resolve(run, {
    requestId,
    kind: 'tool_output',
    result: JSON.stringify({ output, isError }),
    eventType: 'tool.output_received',
    eventData: JSON.stringify({ requestId, isError }),
  });
}

const childResult = (childRunId: string, index: number) =>
  JSON.stringify({
    index,
    runId: childRunId,
    status: 'failed',
    summary: 'ERR_CREW_CHILD_GONE',
    usage: {},
    durationMs: 0,
  });

/** A crew child's report to its parent (the repair for a child that is gone), for delegation `waitpointId`. */
function report(run: RunFixture, childRunId: string, index: number, waitpointId = CALL) {
  return resolve(run, {
    requestId: childRunId,
    kind: 'child',
    result: childResult(childRunId, index),
    eventType: 'child.finished',
    eventData: JSON.stringify({ childRunId, index, status: 'failed', summary: 'ERR_CREW_CHILD_GONE' }),
    waitpointId,
  });
}

/** A run in `status` waiting on the test's question, due at `deadline`, in `state`. */
async function asked(
  deadline = LATER,
  state = 'pending',
  status = 'waiting_for_input',
  result?: string,
): Promise<RunFixture> {
  const run = new RunFixture(redis);
  await run.seed({ status });
  await run.seedWaitpoint(questionWaitpoint(deadline, state, result));
  return run;
}

/** A run in `status` waiting on client tool calls `ids`, due at `deadline`. */
async function calling(ids = ['tcr_a', 'tcr_b'], deadline = LATER, status = 'waiting_for_input') {
  const run = new RunFixture(redis);
  await run.seed({ status });
  const requests = ids.map((id): SeededRequest => ({ id }));
  await run.seedWaitpoint({ id: ids[0] as string, kind: 'tool_output', deadline, requests });
  return run;
}

/** A crew parent in `status` waiting on children `ids` for delegation CALL, due at `deadline`. */
async function delegating(
  ids = ['run_child_a', 'run_child_b'],
  deadline = LATER,
  status = 'waiting_for_children',
) {
  const run = new RunFixture(redis);
  await run.seed({ status });
  const requests = ids.map((id): SeededRequest => ({ id }));
  await run.seedWaitpoint({ id: CALL, kind: 'child', deadline, requests });
  return run;
}

/** Ends the run as the API's cancel does (no token), dropping its waitpoint's requests. */
async function cancel(run: RunFixture): Promise<void> {
  const ended = await run.finalize({ status: 'cancelled' });
  expect(Array.isArray(ended)).toBe(true);
}

/** Nothing of a live run's waitpoint expires: neither the hash nor its results. */
async function expectNoExpiry(run: RunFixture): Promise<void> {
  expect(await redis.ttl(run.keys.waitpoint)).toBe(-1);
  expect(await redis.ttl(run.keys.waitpointResults)).toBe(-1);
}

describe('resolveRequest: a question', () => {
  it('takes the first answer: answered, recorded, the run queued, clarify.answered; the last request', async () => {
    const run = await asked();
    const text = 'The "blue" one, é\nthanks/';
    const { result, messages } = await run.published(run.keys.eventsChannel, () => answer(run, text));
    expect(result).toBe('last');
    expect(await run.waitpoint()).toMatchObject({
      pending: '0',
      [`s:${QUESTION_ID}`]: 'answered',
    });
    // The answer is in the results, beside the waitpoint; nothing of it expires while the run is live.
    expect(await run.results()).toEqual({ [QUESTION_ID]: text });
    await expectNoExpiry(run);
    expect(await run.record()).toEqual({ status: 'queued' });
    const events = await run.appended();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'clarify.answered', data: { requestId: QUESTION_ID, answer: text } },
    ]);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
  });

  it.each(['queued', 'running'])(
    'takes an answer while the run is %s (woken early, or handed back), keeping its status',
    async (status) => {
      const run = await asked(LATER, 'pending', status);
      expect(await answer(run, 'blue')).toBe('last');
      expect(await run.record()).toEqual({ status });
      expect(await run.waitpoint()).toMatchObject({ pending: '0', [`s:${QUESTION_ID}`]: 'answered' });
      expect(await run.results()).toEqual({ [QUESTION_ID]: 'blue' });
      expect((await run.appended()).map((event) => event.type)).toEqual(['clarify.answered']);
    },
  );

  it('refuses a second answer, keeping the first', async () => {
    const run = await asked();
    expect(await answer(run, 'first')).toBe('last');
    expect(await run.unchanged(() => answer(run, 'second'))).toBe('answered');
    expect(await run.results()).toEqual({ [QUESTION_ID]: 'first' });
  });

  it('refuses an answer after the request timed out', async () => {
    const run = await asked(LATER, 'timed_out');
    expect(await run.unchanged(() => answer(run, 'late'))).toBe('timed_out');
  });

  it("refuses an answer past the deadline (by Redis's clock), leaving the request pending", async () => {
    const run = await asked(Date.now() - 1_000);
    expect(await run.unchanged(() => answer(run, 'late'))).toBe('expired');
    expect((await run.waitpoint())[`s:${QUESTION_ID}`]).toBe('pending');
  });

  it.each(['completed', 'failed', 'cancelled'])('refuses an answer once the run is %s', async (status) => {
    const run = await asked();
    await run.seed({ status });
    expect(await run.unchanged(() => answer(run, 'late'))).toBe('ended');
  });

  it('refuses an answer to an unknown request, and to a request of another kind', async () => {
    const none = new RunFixture(redis);
    await none.seed({ status: 'waiting_for_input' });
    expect(await none.unchanged(() => answer(none, 'hello'))).toBe('no_request');
    const run = await calling(['tcr_a']);
    expect(await run.unchanged(() => answer(run, 'hello', '', 'tcr_a'))).toBe('no_request');
    expect(await run.unchanged(() => answer(run, 'hello', '', 'clr_other'))).toBe('no_request');
  });

  it('refuses an answer naming another waitpoint than the one the question is of', async () => {
    const run = await asked();
    const other = {
      requestId: QUESTION_ID,
      kind: 'question' as const,
      result: 'blue',
      eventType: 'clarify.answered',
      eventData: JSON.stringify({ requestId: QUESTION_ID, answer: 'blue' }),
    };
    expect(await run.unchanged(() => resolve(run, { ...other, waitpointId: 'clr_other' }))).toBe(
      'no_request',
    );
    expect(await resolve(run, { ...other, waitpointId: QUESTION_ID })).toBe('last');
  });

  it('takes an answer token recorded for the question once, then refuses it as used', async () => {
    const run = await asked();
    const token = (hash: string) => `t:${QUESTION_ID}:${hash}`;
    // `dddd` is a token of another question.
    await redis.hset(run.keys.waitpoint, token('aaaa'), 'ok', token('bbbb'), 'ok', 't:clr_other:dddd', 'ok');
    expect(await run.unchanged(() => answer(run, 'guess', 'cccc'))).toBe('bad_token');
    expect(await run.unchanged(() => answer(run, 'guess', 'dddd'))).toBe('bad_token');
    expect(await answer(run, 'yes', 'aaaa')).toBe('last');
    expect(await redis.hget(run.keys.waitpoint, token('aaaa'))).toBe('used');
    expect(await redis.hget(run.keys.waitpoint, token('bbbb'))).toBe('ok');
    expect(await run.unchanged(() => answer(run, 'again', 'aaaa'))).toBe('token_used');
    // Another token of the same question is not used, but the question was answered.
    expect(await run.unchanged(() => answer(run, 'again', 'bbbb'))).toBe('answered');
    expect(await run.results()).toEqual({ [QUESTION_ID]: 'yes' });
  });

  it('a refused answer leaves its token unused', async () => {
    const run = await asked(Date.now() - 1_000);
    await redis.hset(run.keys.waitpoint, `t:${QUESTION_ID}:aaaa`, 'ok');
    expect(await run.unchanged(() => answer(run, 'late', 'aaaa'))).toBe('expired');
  });

  it('refuses a token not recorded for the question before saying whether the run or request exists', async () => {
    const noRequest = new RunFixture(redis);
    await noRequest.seed({ status: 'waiting_for_input' });
    expect(await noRequest.unchanged(() => answer(noRequest, 'hello', 'cccc'))).toBe('bad_token');
    const noRun = new RunFixture(redis);
    expect(await noRun.unchanged(() => answer(noRun, 'hello', 'cccc'))).toBe('bad_token');
    // Once the token is the question's, the run's and the request's fate are told.
    const gone = new RunFixture(redis);
    await gone.seedWaitpoint(questionWaitpoint(LATER));
    await redis.hset(gone.keys.waitpoint, `t:${QUESTION_ID}:aaaa`, 'ok');
    expect(await gone.unchanged(() => answer(gone, 'hello', 'aaaa'))).toBe('no_run');
  });

  it('refuses an answer to a run that does not exist', async () => {
    const run = new RunFixture(redis);
    await run.seedWaitpoint(questionWaitpoint(LATER));
    expect(await run.unchanged(() => answer(run, 'hello'))).toBe('no_run');
  });
});

describe('resolveRequest: client tool calls', () => {
  it('takes the first output: received, stored, tool.output_received; the run still waits for the other call', async () => {
    const run = await calling();
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      post(run, 'tcr_a', 'sunny, "21°C"', true),
    );
    expect(result).toBe('ok');
    expect(await run.record()).toEqual({ status: 'waiting_for_input' });
    expect(await run.waitpoint()).toMatchObject({
      pending: '1',
      's:tcr_a': 'received',
      's:tcr_b': 'pending',
    });
    // The output in the results, beside the waitpoint; none for the call still pending.
    expect(Object.keys(await run.results())).toEqual(['tcr_a']);
    expect(JSON.parse((await redis.hget(run.keys.waitpointResults, 'tcr_a')) ?? '')).toEqual({
      output: 'sunny, "21°C"',
      isError: true,
    });
    await expectNoExpiry(run);
    const events = await run.appended();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'tool.output_received', data: { requestId: 'tcr_a', isError: true } },
    ]);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
  });

  it('the last output queues the run asleep on them', async () => {
    const run = await calling();
    expect(await post(run, 'tcr_b')).toBe('ok');
    expect((await run.record()).status).toBe('waiting_for_input');
    expect(await post(run, 'tcr_a')).toBe('last');
    expect(await run.record()).toEqual({ status: 'queued' });
    expect(await run.waitpoint()).toMatchObject({
      pending: '0',
      's:tcr_a': 'received',
      's:tcr_b': 'received',
    });
    expect(Object.keys(await run.results()).sort()).toEqual(['tcr_a', 'tcr_b']);
    expect((await run.appended()).map((e) => e.data)).toEqual([
      { requestId: 'tcr_b', isError: false },
      { requestId: 'tcr_a', isError: false },
    ]);
  });

  it.each(['queued', 'running'])('the last output keeps the status of a run %s (awake)', async (status) => {
    const run = await calling(['tcr_a', 'tcr_b'], LATER, status);
    expect(await post(run, 'tcr_a')).toBe('ok');
    expect(await post(run, 'tcr_b')).toBe('last');
    expect(await run.record()).toEqual({ status });
  });

  it('refuses a second output, keeping the first', async () => {
    const run = await calling();
    expect(await post(run, 'tcr_a', 'first')).toBe('ok');
    expect(await run.unchanged(() => post(run, 'tcr_a', 'second'))).toBe('received');
    expect(await redis.hget(run.keys.waitpointResults, 'tcr_a')).toContain('first');
  });

  it("refuses an output past the deadline (by Redis's clock), and after the call timed out", async () => {
    const run = await calling(['tcr_a'], Date.now() - 1_000);
    expect(await run.unchanged(() => post(run, 'tcr_a'))).toBe('expired');
    // Claimed: the worker that times the calls out.
    await run.seed({ status: 'running', owner: 'w1:t1' });
    expect(
      await expireWaitpoint.run(redis, {
        keys: run.keys,
        args: { ...run.base, token: 'w1:t1', id: 'tcr_a', requestIds: ['tcr_a'] },
      }),
    ).toEqual(['ready', 'tcr_a', 'timed_out', '']);
    expect(await run.unchanged(() => post(run, 'tcr_a'))).toBe('timed_out');
  });

  it.each(['completed', 'failed', 'cancelled'])('refuses an output once the run is %s', async (status) => {
    const run = await calling();
    await run.seed({ status });
    expect(await run.unchanged(() => post(run, 'tcr_a'))).toBe('ended');
  });

  it("refuses an output for a request an earlier waitpoint left pending: it does not count against this one's", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'waiting_for_input' });
    await run.seedWaitpoint({
      id: 'tcr_c',
      kind: 'tool_output',
      deadline: LATER,
      requests: [{ id: 'tcr_c' }],
      extra: { 's:tcr_a': 'pending' },
    });
    expect(await run.unchanged(() => post(run, 'tcr_a'))).toBe('no_request');
    expect(await post(run, 'tcr_c')).toBe('last');
  });

  it('refuses an output for an unknown request, a question, and for a run that does not exist', async () => {
    const run = await calling();
    expect(await run.unchanged(() => post(run, 'tcr_zzz'))).toBe('no_request');
    const question = await asked();
    expect(await question.unchanged(() => post(question, QUESTION_ID))).toBe('no_request');
    const gone = new RunFixture(redis);
    expect(await gone.unchanged(() => post(gone, 'tcr_a'))).toBe('no_run');
  });
});

describe('resolveRequest: a crew child', () => {
  it("records a child's report once, with child.finished; the parent keeps its status, the last one says so", async () => {
    // Past the children's deadline: a report counts whenever it comes.
    const run = await delegating(['run_child_a', 'run_child_b'], Date.now() - 1_000);
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      report(run, 'run_child_b', 1),
    );
    expect(result).toBe('ok');
    expect(await run.waitpoint()).toMatchObject({
      pending: '1',
      's:run_child_a': 'pending',
      's:run_child_b': 'reported',
    });
    expect(await run.results()).toEqual({ run_child_b: childResult('run_child_b', 1) });
    const events = await run.appended();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      {
        type: 'child.finished',
        data: { childRunId: 'run_child_b', index: 1, status: 'failed', summary: 'ERR_CREW_CHILD_GONE' },
      },
    ]);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
    expect(await run.unchanged(() => report(run, 'run_child_b', 1))).toBe('reported');
    // The caller promotes the parent's job: its status stays.
    expect(await report(run, 'run_child_a', 0, '')).toBe('last');
    expect(await run.record()).toEqual({ status: 'waiting_for_children' });
    expect((await run.waitpoint()).pending).toBe('0');
  });

  it.each(['queued', 'running'])(
    'records a report to a parent %s (woken early, or handed back)',
    async (status) => {
      const run = await delegating(['run_child_a'], LATER, status);
      expect(await report(run, 'run_child_a', 0)).toBe('last');
      expect(await run.record()).toEqual({ status });
    },
  );

  it.each(['completed', 'failed', 'cancelled'])('refuses a report once the parent is %s', async (status) => {
    const run = await delegating();
    await run.seed({ status });
    expect(await run.unchanged(() => report(run, 'run_child_a', 0))).toBe('ended');
  });

  it('refuses a report for another delegation, an unknown child, or a request of another kind', async () => {
    const run = await delegating();
    expect(await run.unchanged(() => report(run, 'run_child_a', 0, 'call_other'))).toBe('no_request');
    expect(await run.unchanged(() => report(run, 'run_child_x', 0))).toBe('no_request');
    const calls = await calling(['tcr_a']);
    expect(await calls.unchanged(() => report(calls, 'tcr_a', 0, 'tcr_a'))).toBe('no_request');
    const gone = new RunFixture(redis);
    expect(await gone.unchanged(() => report(gone, 'run_child_a', 0))).toBe('no_run');
  });
});

describe('resolveRequest: a run that ended', () => {
  // finalizeRun keeps only the states (`s:`) and the tokens (`t:`) of the waitpoint: a request still
  // pending at the end has lost the waitpoint's `kind` and `id`, and is still told the run ended
  // (409), not unknown.
  it('tells a late answer or output that the run has ended, after finalizeRun dropped the requests', async () => {
    const question = await asked();
    await redis.hset(question.keys.waitpoint, `t:${QUESTION_ID}:aaaa`, 'ok');
    await cancel(question);
    expect(await question.unchanged(() => answer(question, 'late'))).toBe('ended');
    expect(await question.unchanged(() => answer(question, 'late', 'aaaa'))).toBe('ended');
    const calls = await calling();
    await cancel(calls);
    expect(await calls.waitpoint()).toEqual({ 's:tcr_a': 'pending', 's:tcr_b': 'pending' });
    expect(await calls.unchanged(() => post(calls, 'tcr_a'))).toBe('ended');
    const parent = await delegating();
    await cancel(parent);
    expect(await parent.unchanged(() => report(parent, 'run_child_a', 0, ''))).toBe('ended');
  });

  it("tells a late answer to a request resolved before the end its request's fate", async () => {
    const run = await calling();
    expect(await post(run, 'tcr_a')).toBe('ok');
    await cancel(run);
    // The output went with the results; the state stays.
    expect(await redis.exists(run.keys.waitpointResults)).toBe(0);
    expect(await run.waitpoint()).toEqual({ 's:tcr_a': 'received', 's:tcr_b': 'pending' });
    expect(await run.unchanged(() => post(run, 'tcr_a'))).toBe('received');
  });
});

describe("resolveRequest: the waitpoint's kind", () => {
  /** Resolves `requestId` as a request of `kind`, of whichever waitpoint is current. */
  function resolveAs(run: RunFixture, kind: RequestKind, requestId: string) {
    if (kind === 'question') return answer(run, 'blue', '', requestId);
    if (kind === 'tool_output') return post(run, requestId);
    return report(run, requestId, 0, '');
  }
  const KINDS: RequestKind[] = ['question', 'tool_output', 'child'];
  const PAIRS = KINDS.flatMap((waits) =>
    KINDS.filter((other) => other !== waits).map((other): [RequestKind, RequestKind] => [waits, other]),
  );

  it.each(PAIRS)(
    'refuses to resolve a pending request of a waitpoint of %s as a request of %s (no_request), and takes it as its own kind',
    async (waits, other) => {
      const run = new RunFixture(redis);
      await run.seed({ status: waits === 'child' ? 'waiting_for_children' : 'waiting_for_input' });
      await run.seedWaitpoint({ id: 'req_a', kind: waits, deadline: LATER, requests: [{ id: 'req_a' }] });
      expect(await run.unchanged(() => resolveAs(run, other, 'req_a'))).toBe('no_request');
      expect(await resolveAs(run, waits, 'req_a')).toBe('last');
      expect(Object.keys(await run.results())).toEqual(['req_a']);
    },
  );
});

describe('resolveRequest: a waitpoint moved from the release before', () => {
  it('resolves its requests as any other (their bodies in q:, no event), the results beside it', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'waiting_for_input' });
    const logged = await run.seedWaitpoint({
      id: 'tcr_a',
      kind: 'tool_output',
      deadline: LATER,
      requests: [
        { id: 'tcr_a', moved: true },
        {
          id: 'tcr_b',
          moved: true,
          state: 'received',
          result: JSON.stringify({ output: 'B', isError: false }),
        },
      ],
    });
    expect(logged).toEqual([]);
    const before = await run.waitpoint();
    expect(before).toHaveProperty('q:tcr_a');
    expect(before).not.toHaveProperty('e:tcr_a');
    expect(await run.unchanged(() => answer(run, 'blue', '', 'tcr_a'))).toBe('no_request');
    expect(await run.unchanged(() => post(run, 'tcr_b'))).toBe('received');
    expect(await post(run, 'tcr_a', 'A')).toBe('last');
    expect(await run.record()).toEqual({ status: 'queued' });
    expect(await run.waitpoint()).toEqual({ ...before, pending: '0', 's:tcr_a': 'received' });
    expect(await run.results()).toEqual({
      tcr_a: JSON.stringify({ output: 'A', isError: false }),
      tcr_b: JSON.stringify({ output: 'B', isError: false }),
    });
    expect((await run.events()).map((event) => event.type)).toEqual(['tool.output_received']);
  });
});
