import { describe, expect, it } from 'vitest';
import { answerClarify } from '../../src/scripts.js';
import { parseMessage, REQUEST_ID, RunFixture, useRedis } from './fixture.js';

const redis = useRedis();
const LATER = Date.now() + 3_600_000;

function answer(run: RunFixture, text: string, tokenHash = '') {
  return answerClarify.run(redis, {
    keys: run.clarifyKeys,
    args: { ...run.base, requestId: REQUEST_ID, answer: text, tokenHash },
  });
}

/** A run waiting on the test's request, due at `expiresAt`. */
async function waiting(expiresAt = LATER, status = 'pending'): Promise<RunFixture> {
  const run = new RunFixture(redis);
  await run.seed({ status: 'waiting_for_input' });
  await run.seedQuestion(expiresAt, status);
  return run;
}

describe('answerClarify', () => {
  it('takes the first answer: the request answered, the question dropped, the run queued, clarify.answered', async () => {
    const run = await waiting();
    const text = 'The "blue" one, é\nthanks/';
    const { result, messages } = await run.published(run.keys.eventsChannel, () => answer(run, text));
    expect(result).toBe('ok');
    expect(await run.request()).toMatchObject({ status: 'answered', answer: text });
    expect(await redis.exists(run.keys.pending)).toBe(0);
    expect((await run.record()).status).toBe('queued');
    const events = await run.events();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'clarify.answered', data: { requestId: REQUEST_ID, answer: text } },
    ]);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
  });

  it('refuses a second answer, keeping the first', async () => {
    const run = await waiting();
    await answer(run, 'first');
    expect(await run.unchanged(() => answer(run, 'second'))).toBe('answered');
    expect((await run.request()).answer).toBe('first');
  });

  it('refuses an answer after the request timed out', async () => {
    const run = await waiting(LATER, 'timed_out');
    expect(await run.unchanged(() => answer(run, 'late'))).toBe('timed_out');
  });

  it("refuses an answer past the deadline (by Redis's clock), leaving the request pending", async () => {
    const run = await waiting(Date.now() - 1_000);
    expect(await run.unchanged(() => answer(run, 'late'))).toBe('expired');
  });

  it.each(['completed', 'failed', 'cancelled'])('refuses an answer once the run is %s', async (status) => {
    const run = await waiting();
    await run.seed({ status });
    expect(await run.unchanged(() => answer(run, 'late'))).toBe('ended');
  });

  it('refuses an answer to an unknown request', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'waiting_for_input' });
    expect(await run.unchanged(() => answer(run, 'hello'))).toBe('no_request');
  });

  it('takes an answer token recorded for the question once, then refuses it as used', async () => {
    const run = await waiting();
    const clarify = run.clarifyKeys.clarify;
    await redis.hset(clarify, 't:aaaa', 'ok', 't:bbbb', 'ok');
    expect(await run.unchanged(() => answer(run, 'guess', 'cccc'))).toBe('bad_token');
    expect(await answer(run, 'yes', 'aaaa')).toBe('ok');
    expect(await redis.hget(clarify, 't:aaaa')).toBe('used');
    expect(await run.unchanged(() => answer(run, 'again', 'aaaa'))).toBe('token_used');
    // Another token of the same question is not used, but the question was answered.
    expect(await run.unchanged(() => answer(run, 'again', 'bbbb'))).toBe('answered');
    expect((await run.request()).answer).toBe('yes');
  });

  it('refuses a token not recorded for the question before saying whether the run or request exists', async () => {
    const noRequest = new RunFixture(redis);
    await noRequest.seed({ status: 'waiting_for_input' });
    expect(await noRequest.unchanged(() => answer(noRequest, 'hello', 'cccc'))).toBe('bad_token');
    const noRun = new RunFixture(redis);
    expect(await noRun.unchanged(() => answer(noRun, 'hello', 'cccc'))).toBe('bad_token');
    // Once the token is the question's, the run's and the request's fate are told.
    const gone = new RunFixture(redis);
    await gone.seedQuestion(LATER);
    await redis.hset(gone.clarifyKeys.clarify, 't:aaaa', 'ok');
    expect(await gone.unchanged(() => answer(gone, 'hello', 'aaaa'))).toBe('no_run');
  });

  it('refuses an answer to a run that does not exist', async () => {
    const run = new RunFixture(redis);
    await run.seedQuestion(LATER);
    expect(await run.unchanged(() => answer(run, 'hello'))).toBe('no_run');
  });
});
