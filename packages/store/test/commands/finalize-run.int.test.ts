import { describe, expect, it } from 'vitest';
import {
  parseMessage,
  QUESTION_ID,
  questionWaitpoint,
  RunFixture,
  type SeededRequest,
  useRedis,
} from './fixture.js';

const redis = useRedis();
/** A time the script set: epoch ms, by Redis's clock. */
const REDIS_NOW = expect.stringMatching(/^1\d{12}$/);
const RETENTION = 3_600;

/** What is left of the waitpoint of `live()` once the run has ended: its requests' states and the tokens. */
const WAITPOINT_LEFT = {
  [`s:${QUESTION_ID}`]: 'pending',
  's:clr_old': 'answered',
  [`t:${QUESTION_ID}:aaaa`]: 'ok',
};

/**
 * A live run owned by w1:t1, with every key a run can have: it waits on a question (with an
 * answer token), after an earlier one.
 */
async function live(): Promise<RunFixture> {
  const run = new RunFixture(redis);
  await run.seed({ status: 'running', owner: 'w1:t1', todos: '[]' });
  await redis.set(run.keys.spec, '{"input":"hi"}');
  await redis.set(run.keys.checkpoint, '{"version":1}');
  await redis.set(run.keys.metadata, '{"team":"a"}');
  await run.seedWaitpoint({
    ...questionWaitpoint(Date.now() + 60_000),
    extra: { 's:clr_old': 'answered', [`t:${QUESTION_ID}:aaaa`]: 'ok' },
  });
  return run;
}

/**
 * A live run owned by w1:t1, woken by the outputs of the client tool calls it waited on (received,
 * in the results hash): recorded by `openWaitpoint` (`e:`), or `moved` by `migrateWaitpoint` (`q:`).
 */
async function woken(moved = false): Promise<RunFixture> {
  const run = new RunFixture(redis);
  await run.seed({ status: 'running', owner: 'w1:t1' });
  await run.seedWaitpoint({
    id: 'tcr_a',
    kind: 'tool_output',
    deadline: Date.now() + 60_000,
    requests: ['tcr_a', 'tcr_b'].map(
      (id): SeededRequest => ({ id, moved, state: 'received', result: `{"output":"${id}","isError":false}` }),
    ),
  });
  return run;
}

async function expectRetention(key: string): Promise<void> {
  expect(await redis.ttl(key)).toBeGreaterThan(RETENTION - 10);
  expect(await redis.ttl(key)).toBeLessThanOrEqual(RETENTION);
}

describe('finalizeRun', () => {
  it('ends the run: status, finishedAt and fields, owner gone, the events then the terminal one, then expiry', async () => {
    const run = await live();
    // A live run's waitpoint does not expire.
    expect(await redis.ttl(run.keys.waitpoint)).toBe(-1);
    const logged = await run.events();
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      run.finalize({
        token: 'w1:t1',
        checkpoint: '{"version":2}',
        fields: ['output', 'done', 'todos', '[{"id":"1"}]', 'step', '4'],
        events: [
          'message',
          '{"role":"assistant","content":"done","toolCalls":[]}',
          'usage',
          '{"inputTokens":1,"outputTokens":2,"totalTokens":3}',
        ],
      }),
    );
    expect(await run.record()).toEqual({
      status: 'completed',
      finishedAt: REDIS_NOW,
      output: 'done',
      todos: '[{"id":"1"}]',
      step: '4',
    });
    expect(await redis.get(run.keys.checkpoint)).toBe('{"version":2}');
    expect(await redis.exists(run.keys.spec)).toBe(0);
    // The waitpoint's requests are dropped: their states and the tokens stay, for a late answer.
    expect(await run.waitpoint()).toEqual(WAITPOINT_LEFT);
    const events = await run.events(logged.at(-1)?.id);
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'message', data: { role: 'assistant', content: 'done', toolCalls: [] } },
      { type: 'usage', data: { inputTokens: 1, outputTokens: 2, totalTokens: 3 } },
      { type: 'run.completed', data: { output: 'done' } },
    ]);
    // No crew parent: nothing to report.
    expect(result).toEqual([events[2]?.id, '', '']);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
    for (const key of [run.keys.record, run.keys.events, run.keys.checkpoint, run.keys.metadata]) {
      await expectRetention(key);
    }
    // What is left of the waitpoint stays for the retention too.
    await expectRetention(run.keys.waitpoint);
    // The question's event stays in the log, before the end's.
    expect((await run.events())[0]).toEqual(logged[0]);
  });

  it("drops the waitpoint's results and the ids of its requests' events: only states and tokens stay", async () => {
    const run = await woken();
    expect(await run.waitpoint()).toHaveProperty('e:tcr_a');
    expect(Object.keys(await run.results())).toEqual(['tcr_a', 'tcr_b']);
    expect(await run.finalize({ token: 'w1:t1' })).toEqual([expect.any(String), '', '']);
    expect(await run.waitpoint()).toEqual({ 's:tcr_a': 'received', 's:tcr_b': 'received' });
    expect(await redis.exists(run.keys.waitpointResults)).toBe(0);
    await expectRetention(run.keys.waitpoint);
  });

  it('drops the request bodies of a waitpoint moved from the release before (q:), and its results', async () => {
    const run = await woken(true);
    expect(await run.waitpoint()).toHaveProperty('q:tcr_a');
    expect(await run.finalize({ token: 'w1:t1' })).toEqual([expect.any(String), '', '']);
    expect(await run.waitpoint()).toEqual({ 's:tcr_a': 'received', 's:tcr_b': 'received' });
    expect(await redis.exists(run.keys.waitpointResults)).toBe(0);
    await expectRetention(run.keys.waitpoint);
  });

  it("keeps a failed or cancelled run's spec and submitted files for the retention (a retry starts from them); a completed run's go", async () => {
    for (const status of ['failed', 'cancelled', 'completed'] as const) {
      const run = await live();
      await redis.set(run.keys.files, '{"a.txt":"A"}');
      const ended = await run.finalize({ status, fields: [] });
      expect(Array.isArray(ended)).toBe(true);
      // Whatever the end, the waitpoint keeps only its requests' states and the tokens.
      expect(await run.waitpoint()).toEqual(WAITPOINT_LEFT);
      expect(await redis.exists(run.keys.waitpointResults)).toBe(0);
      await expectRetention(run.keys.waitpoint);
      if (status === 'completed') {
        expect(await redis.exists(run.keys.spec, run.keys.files)).toBe(0);
        continue;
      }
      expect(await redis.get(run.keys.spec)).toBe('{"input":"hi"}');
      expect(await redis.get(run.keys.files)).toBe('{"a.txt":"A"}');
      for (const key of [run.keys.spec, run.keys.files]) {
        await expectRetention(key);
      }
    }
  });

  it("answers the run's tenant with the end", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1', tenant: 'acme' });
    expect(await run.finalize()).toEqual([expect.any(String), '', 'acme']);
    // A run that never waited gets no waitpoint.
    expect(await redis.exists(run.keys.waitpoint)).toBe(0);
  });

  it('ends the run whoever owns it when the token is empty, keeps the stored checkpoint without a new one', async () => {
    const run = await live();
    expect(await run.finalize({ fields: [] })).toEqual([expect.any(String), '', '']);
    expect(await run.record()).toEqual({ status: 'completed', finishedAt: REDIS_NOW, todos: '[]' });
    expect(await redis.get(run.keys.checkpoint)).toBe('{"version":1}');
    expect((await run.appended()).map((event) => event.type)).toEqual(['run.completed']);
  });

  it('rewrites a log of up to 100 events at its real size', async () => {
    const run = await live();
    await run.fillLog(98);
    await run.finalize();
    // The question's event, 98, and the end.
    expect(await redis.xlen(run.keys.events)).toBe(100);
    expect(await run.logIsCompact()).toBe(true);
  });

  it('leaves a longer log as it is', async () => {
    const run = await live();
    await run.fillLog(100);
    await run.finalize();
    expect(await redis.xlen(run.keys.events)).toBe(102);
    expect(await run.logIsCompact()).toBe(false);
  });

  it("is -1 with another worker's token, and changes nothing", async () => {
    const run = await live();
    expect(await run.unchanged(() => run.finalize({ token: 'w2:t2', events: ['message', '{}'] }))).toBe(-1);
  });

  it.each(['completed', 'failed', 'cancelled'])(
    'is 0 once the run is %s, and changes nothing',
    async (status) => {
      const run = await live();
      await run.seed({ status });
      expect(await run.unchanged(() => run.finalize({ events: ['message', '{}'] }))).toBe(0);
    },
  );

  it('is 0 for a run that does not exist, and writes nothing', async () => {
    const run = new RunFixture(redis);
    expect(await run.finalize({ events: ['message', '{}'] })).toBe(0);
    expect(await redis.exists(run.keys.record, run.keys.events)).toBe(0);
  });

  it("a session's run: its turn moves into the transcript and it leaves the queue, in the same step", async () => {
    const run = new RunFixture(redis, { session: true });
    const session = run.keys.session;
    await run.seed({ status: 'running', owner: 'w1:t1', session: run.sessionId as string });
    await redis.hset(session.record, { id: run.sessionId as string, updatedAt: '1' });
    await redis.rpush(session.transcript, '{"role":"user","content":"before"}');
    await redis.rpush(session.queue, run.runId, 'run_next');
    await redis.rpush(run.keys.turn, '{"role":"user","content":"saved"}');
    const turn = ['{"role":"user","content":"hi"}', '{"role":"assistant","content":"hello"}'];
    expect(
      await run.finalize({
        token: 'w1:t1',
        turn,
        events: ['usage', '{"inputTokens":1,"outputTokens":1,"totalTokens":2}'],
      }),
    ).toEqual([expect.stringMatching(/^\d+-\d+$/), '', '']);
    expect(await redis.lrange(session.transcript, 0, -1)).toEqual([
      '{"role":"user","content":"before"}',
      ...turn,
    ]);
    expect(await redis.lrange(session.queue, 0, -1)).toEqual(['run_next']);
    expect(await redis.exists(run.keys.turn)).toBe(0);
    expect(await redis.hget(session.record, 'updatedAt')).toEqual(REDIS_NOW);
    expect(await redis.ttl(session.transcript)).toBeGreaterThan(500);
    expect((await run.events()).map((event) => event.type)).toEqual(['usage', 'run.completed']);

    // Ended already: the transcript is not written twice.
    expect(await run.finalize({ turn })).toBe(0);
    expect(await redis.llen(session.transcript)).toBe(3);
  });

  it("a session's run ended by another (no turn given): the turn its last save stored moves", async () => {
    const run = new RunFixture(redis, { session: true });
    await run.seed({ status: 'waiting_for_input', session: run.sessionId as string });
    await redis.rpush(run.keys.session.queue, run.runId);
    await redis.rpush(run.keys.turn, '{"role":"user","content":"saved"}');
    expect(await run.finalize()).toEqual([expect.stringMatching(/^\d+-\d+$/), '', '']);
    expect(await redis.lrange(run.keys.session.transcript, 0, -1)).toEqual([
      '{"role":"user","content":"saved"}',
    ]);
    expect(await redis.llen(run.keys.session.queue)).toBe(0);
  });
});

describe('finalizeRun: a crew child', () => {
  const CALL = 'call_1';
  const USAGE = { inputTokens: 1, outputTokens: 2, totalTokens: 3 };

  /**
   * A parent (in `status`) waiting on delegation CALL for its children `a` and `b` (due at
   * `deadline`), each running, owned by w2:t2, created 5 s ago.
   */
  async function crew(status = 'waiting_for_children', deadline = Date.now() + 60_000) {
    const parent = new RunFixture(redis);
    await parent.seed({ status, tenant: 'acme' });
    const a = new RunFixture(redis, { parent });
    const b = new RunFixture(redis, { parent });
    for (const [index, child] of [a, b].entries()) {
      await child.seed({
        status: 'running',
        owner: 'w2:t2',
        tenant: 'acme',
        parent: parent.runId,
        call: CALL,
        index,
        createdAt: Date.now() - 5_000,
      });
    }
    const requests = [a, b].map((child): SeededRequest => ({ id: child.runId }));
    await parent.seedWaitpoint({ id: CALL, kind: 'child', deadline, requests });
    return { parent, a, b };
  }

  /** Ends `child` (completed) and reports it as `childStatus` to the parent it names. */
  function end(child: RunFixture, parentId = child.parent?.runId ?? '', childStatus = 'completed') {
    return child.finalize({
      token: 'w2:t2',
      parentId,
      childStatus,
      childSummary: `${childStatus}: "done" é`,
      childUsage: JSON.stringify(USAGE),
    });
  }

  it("reports to its parent's waitpoint in the step that ends it: reported, its result, child.finished; the last says ready", async () => {
    const { parent, a, b } = await crew();
    const { result, messages } = await a.published(parent.keys.eventsChannel, () =>
      end(b, undefined, 'failed'),
    );
    expect(result).toEqual([expect.stringMatching(/^\d+-\d+$/), '', 'acme']);
    const waitpoint = await parent.waitpoint();
    expect(waitpoint).toMatchObject({
      id: CALL,
      kind: 'child',
      pending: '1',
      [`s:${a.runId}`]: 'pending',
      [`s:${b.runId}`]: 'reported',
    });
    // The result is in the parent's results hash, beside its waitpoint; nothing of it expires.
    const results = await parent.results();
    expect(Object.keys(results)).toEqual([b.runId]);
    expect(await redis.ttl(parent.keys.waitpoint)).toBe(-1);
    expect(await redis.ttl(parent.keys.waitpointResults)).toBe(-1);
    const reported = JSON.parse(results[b.runId] ?? '');
    expect(reported).toEqual({
      index: 1,
      runId: b.runId,
      status: 'failed',
      summary: 'failed: "done" é',
      usage: USAGE,
      durationMs: expect.any(Number),
    });
    expect(reported.durationMs).toBeGreaterThanOrEqual(4_000);
    expect(reported.durationMs).toBeLessThan(60_000);
    // The parent's log and channel, under the parent's id; the parent keeps its status.
    const events = await parent.appended();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      {
        type: 'child.finished',
        data: { childRunId: b.runId, index: 1, status: 'failed', summary: 'failed: "done" é' },
      },
    ]);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: parent.runId })));
    expect(await parent.record()).toEqual({ status: 'waiting_for_children', tenant: 'acme' });
    // The child's own end is its own.
    expect((await b.record()).status).toBe('completed');
    expect((await b.events()).map((event) => event.type)).toEqual(['run.completed']);

    expect(await end(a)).toEqual([expect.any(String), 'ready', 'acme']);
    expect(await parent.waitpoint()).toMatchObject({ pending: '0', [`s:${a.runId}`]: 'reported' });
    expect(Object.keys(await parent.results()).sort()).toEqual([a.runId, b.runId].sort());
    expect(await parent.record()).toEqual({ status: 'waiting_for_children', tenant: 'acme' });
    expect((await parent.appended()).map((event) => event.type)).toEqual([
      'child.finished',
      'child.finished',
    ]);
    // Ended already: reported once.
    expect(await a.unchanged(() => end(a))).toBe(0);
  });

  it("reports past the children's deadline too (a child's report counts whenever it comes)", async () => {
    const { parent, a, b } = await crew('waiting_for_children', Date.now() - 1_000);
    expect(await end(a)).toEqual([expect.any(String), '', 'acme']);
    expect(await end(b)).toEqual([expect.any(String), 'ready', 'acme']);
    expect((await parent.waitpoint()).pending).toBe('0');
  });

  it.each(['queued', 'running'])('reports to a parent %s (woken early, or handed back)', async (status) => {
    const { parent, a } = await crew(status);
    expect(await end(a)).toEqual([expect.any(String), '', 'acme']);
    expect((await parent.waitpoint())[`s:${a.runId}`]).toBe('reported');
    expect(await parent.record()).toEqual({ status, tenant: 'acme' });
  });

  it("is 'unreported' when the caller names another parent (or none), and leaves the parent as it is", async () => {
    for (const named of ['', 'run_other']) {
      const { parent, a } = await crew();
      expect(await parent.unchanged(() => end(a, named))).toEqual([expect.any(String), 'unreported', 'acme']);
      expect((await a.record()).status).toBe('completed');
    }
  });

  it('reports nothing to a parent that waits on another delegation, or has ended', async () => {
    const other = await crew();
    await redis.hset(other.parent.keys.waitpoint, 'id', 'call_2');
    expect(await other.parent.unchanged(() => end(other.a))).toEqual([expect.any(String), '', 'acme']);
    for (const status of ['completed', 'failed', 'cancelled']) {
      const ended = await crew();
      await ended.parent.seed({ status });
      expect(await ended.parent.unchanged(() => end(ended.a))).toEqual([expect.any(String), '', 'acme']);
    }
  });

  it("a parent that ends drops its waitpoint's requests: a child that ends later reports nothing", async () => {
    const { parent, a, b } = await crew();
    expect(await parent.finalize({ fields: [] })).toEqual([expect.any(String), '', 'acme']);
    expect(await parent.waitpoint()).toEqual({ [`s:${a.runId}`]: 'pending', [`s:${b.runId}`]: 'pending' });
    expect(await redis.exists(parent.keys.waitpointResults)).toBe(0);
    expect(await parent.unchanged(() => end(a))).toEqual([expect.any(String), '', 'acme']);
    expect((await parent.events()).at(-1)?.type).toBe('run.completed');
  });

  it("is -1 with another worker's token, and changes nothing of the child or its parent", async () => {
    const { a } = await crew();
    expect(await a.unchanged(() => a.finalize({ token: 'w9:t9', parentId: a.parent?.runId as string }))).toBe(
      -1,
    );
  });
});
