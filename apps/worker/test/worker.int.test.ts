import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { call, TENANT, until, useDeployments } from './harness.js';

const deploy = useDeployments();

const clarifyScript = (question = 'Which colour?') => [
  { toolCalls: [call('clarify', { question, choices: ['red', 'blue'] })] },
  { content: 'finished' },
];

function assertOrdered(events: RunEvent[]) {
  const ids = events.map((e) => e.id);
  expect(new Set(ids).size).toBe(ids.length);
  const key = (id: string) => id.split('-').map(Number) as [number, number];
  for (let i = 1; i < ids.length; i++) {
    const [am, as] = key(ids[i - 1] as string);
    const [bm, bs] = key(ids[i] as string);
    expect(bm > am || (bm === am && bs > as)).toBe(true);
  }
}

describe('worker', () => {
  it('a suspended run frees its slot: a second run completes while the first waits', async () => {
    const d = await deploy('slot');
    await d.startWorker({ TETHER_WORKER_CONCURRENCY: '1' });
    const waiting = await d.submit(clarifyScript(), { clarify: { timeoutMs: 60_000 } });
    const requested = await d.waitForEvent(waiting, 'clarify.requested');
    const other = await d.submit([{ content: 'second done' }]);
    await d.waitForEvent(other, 'run.completed');
    expect((await d.store.get(other))?.output).toBe('second done');
    // The final turn is stored with the end, in order before the terminal event.
    const finalCheckpoint = JSON.parse((await d.store.loadCheckpoint(other)) ?? '{}');
    expect(finalCheckpoint.step).toBe(1);
    expect(finalCheckpoint.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'second done' });
    expect((await d.store.readEvents(other)).map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'attempt.started',
      'message.delta',
      'usage',
      'message',
      'run.completed',
    ]);
    const first = await d.store.get(waiting);
    expect(first?.status).toBe('waiting_for_input');
    expect(first?.pendingClarify?.requestId).toBe((requested.data as { requestId: string }).requestId);

    await d.service.answer(TENANT, waiting, (requested.data as { requestId: string }).requestId, 'red');
    await d.waitForEvent(waiting, 'run.completed');
    const events = await d.store.readEvents(waiting);
    assertOrdered(events);
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['clarify.requested', 'clarify.answered', 'run.completed']),
    );
    const clarifyResult = events.find((e) => e.type === 'tool.result');
    expect(clarifyResult?.data).toMatchObject({ name: 'clarify', content: 'red' });
    expect(events.at(-1)?.type).toBe('run.completed');
  });

  it("loads the tokenizer's encoding before it says it is ready, and says how long that took", async () => {
    const d = await deploy('tokenizer');
    const worker = await d.startWorker();
    const ready = worker
      .output()
      .split('\n')
      .find((line) => line.includes('"msg":"worker ready"'));
    expect(JSON.parse(ready ?? '{}').tokenizerLoadMs).toEqual(expect.any(Number));
  });

  it('suspends on worker process A and, after A stops, resumes and completes on worker process B', async () => {
    const d = await deploy('handover');
    const a = await d.startWorker({ TETHER_WORKER_ID: 'worker-a' });
    const runId = await d.submit(clarifyScript(), { clarify: { timeoutMs: 60_000 } });
    const requested = await d.waitForEvent(runId, 'clarify.requested');
    expect(await a.stop('SIGTERM')).toEqual({ code: 0, signal: null });

    const b = await d.startWorker({ TETHER_WORKER_ID: 'worker-b' });
    await d.service.answer(TENANT, runId, (requested.data as { requestId: string }).requestId, 'blue');
    await d.waitForEvent(runId, 'run.completed');
    await b.waitFor(new RegExp(`"runId":"${runId}".*"msg":"run completed"`));
    const events = await d.store.readEvents(runId);
    assertOrdered(events);
    expect(events.filter((e) => e.type === 'attempt.started').map((e) => e.data)).toEqual([
      { attempt: 1, resumed: false, step: 0 },
      { attempt: 1, resumed: true, step: 1 },
    ]);
  });

  it('times out a question: the run goes on with the timeout message, and a late answer is refused', async () => {
    const d = await deploy('timeout');
    await d.startWorker();
    const runId = await d.submit(clarifyScript(), { clarify: { timeoutMs: 1_000 }, locale: 'en' });
    const requested = await d.waitForEvent(runId, 'clarify.requested');
    await d.waitForEvent(runId, 'clarify.timed_out');
    await d.waitForEvent(runId, 'run.completed');
    const result = (await d.store.readEvents(runId)).find((e) => e.type === 'tool.result');
    expect((result?.data as { content: string } | undefined)?.content).toMatch(/did not answer/i);
    await expect(
      d.service.answer(TENANT, runId, (requested.data as { requestId: string }).requestId, 'too late'),
    ).rejects.toMatchObject({ code: 'ERR_CLARIFY_TIMED_OUT', statusCode: 409 });
  });

  it('of ten concurrent answers, exactly one wins', async () => {
    const d = await deploy('race');
    await d.startWorker();
    const runId = await d.submit(clarifyScript(), { clarify: { timeoutMs: 60_000 } });
    const requested = await d.waitForEvent(runId, 'clarify.requested');
    const requestId = (requested.data as { requestId: string }).requestId;
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => d.service.answer(TENANT, runId, requestId, `answer ${i}`)),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const lost of results.filter((r) => r.status === 'rejected')) {
      expect((lost as PromiseRejectedResult).reason).toMatchObject({ code: 'ERR_CLARIFY_ALREADY_ANSWERED' });
    }
    await d.waitForEvent(runId, 'run.completed');
    const answered = (await d.store.readEvents(runId)).filter((e) => e.type === 'clarify.answered');
    expect(answered).toHaveLength(1);
    await expect(
      d.service.answer(TENANT, runId, 'clr_0000000000aaaaaaaaaaaaaaaa', 'x'),
    ).rejects.toMatchObject({
      code: 'ERR_CLARIFY_UNKNOWN',
      statusCode: 404,
    });
  });

  it('cancels a queued run: it leaves the queue and run.cancelled is its last event', async () => {
    const d = await deploy('cancel-queued');
    const runId = await d.submit([{ content: 'never' }]);
    expect(await d.service.cancel(TENANT, runId)).toBe('queued');
    expect((await d.store.get(runId))?.status).toBe('cancelled');
    expect(await d.service.getJob(runId)).toBeUndefined();
    expect((await d.store.readEvents(runId)).at(-1)?.type).toBe('run.cancelled');
    await expect(d.service.cancel(TENANT, runId)).rejects.toMatchObject({
      code: 'ERR_RUN_FINISHED',
      statusCode: 409,
    });
  });

  it('cancels a running run: its long bash command dies', async () => {
    const d = await deploy('cancel-running');
    await d.startWorker();
    const runId = await d.submit([
      { toolCalls: [call('bash', { command: 'echo $$ > pid.txt; sleep 30; echo late > late.txt' })] },
      { content: 'never' },
    ]);
    await d.waitForEvent(runId, 'tool.call');
    const pidFile = join(d.workspaceRoot, runId, 'pid.txt');
    await until(
      async () => (await readFile(pidFile, 'utf8').catch(() => '')).trim() !== '',
      'the command to start',
    );
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    expect(await d.service.cancel(TENANT, runId)).toBe('running');
    await d.waitForEvent(runId, 'run.cancelled', 10_000);
    await until(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, 'the bash process to die');
    const events = await d.store.readEvents(runId);
    expect(events.at(-1)?.type).toBe('run.cancelled');
    expect(existsSync(join(d.workspaceRoot, runId, 'late.txt'))).toBe(false);
  });

  it('cancels a run waiting for input; its question can no longer be answered', async () => {
    const d = await deploy('cancel-waiting');
    await d.startWorker();
    const runId = await d.submit(clarifyScript(), { clarify: { timeoutMs: 60_000 } });
    const requested = await d.waitForEvent(runId, 'clarify.requested');
    expect(await d.service.cancel(TENANT, runId)).toBe('waiting_for_input');
    // At once, or (when the cancel landed while the worker was still delaying the job) as soon as the
    // worker wakes the job for it: see early-answer.int.test.ts.
    await d.waitForEvent(runId, 'run.cancelled', 5_000);
    expect((await d.store.get(runId))?.status).toBe('cancelled');
    // Gone from the queue: taken off by the cancel, or completed by the worker that woke it, just after its claim ended the run.
    await until(
      async () => (await d.service.getJob(runId)) === undefined,
      'the job to leave the queue',
      5_000,
    );
    await expect(
      d.service.answer(TENANT, runId, (requested.data as { requestId: string }).requestId, 'late'),
    ).rejects.toMatchObject({ code: 'ERR_CLARIFY_NOT_PENDING' });
    expect((await d.store.readEvents(runId)).at(-1)?.type).toBe('run.cancelled');
  });

  it('after kill -9 between two tool calls, another worker completes the run and the first call ran once', async () => {
    const d = await deploy('kill9');
    const a = await d.startWorker({ TETHER_WORKER_ID: 'worker-a', TETHER_SANDBOX: 'auto' });
    const second = '[ -f started2 ] && echo resumed >> second.txt || { touch started2; sleep 30; }';
    const runId = await d.submit([
      { toolCalls: [call('bash', { command: 'echo once >> side.txt' }), call('bash', { command: second })] },
      { content: 'recovered' },
    ]);
    const workspace = join(d.workspaceRoot, runId);
    await d.waitForEvent(
      runId,
      (e) => e.type === 'tool.call' && (e.data as { callId: string }).callId === 'call_0_1',
    );
    await until(() => existsSync(join(workspace, 'started2')), 'the second call to start');
    a.child.kill('SIGKILL');
    await a.exited;

    const b = await d.startWorker({ TETHER_WORKER_ID: 'worker-b', TETHER_SANDBOX: 'auto' });
    await d.waitForEvent(runId, 'run.completed', 30_000);
    await b.waitFor(/"msg":"run completed"/);
    expect(await readFile(join(workspace, 'side.txt'), 'utf8')).toBe('once\n');
    expect(await readFile(join(workspace, 'second.txt'), 'utf8')).toBe('resumed\n');
    const results = (await d.store.readEvents(runId)).filter((e) => e.type === 'tool.result');
    expect(results.map((e) => (e.data as { callId: string }).callId)).toEqual(['call_0_0', 'call_0_1']);
  }, 60_000);

  it('on SIGTERM, stops at the next checkpoint and another worker finishes the run, losing nothing', async () => {
    const d = await deploy('sigterm');
    const a = await d.startWorker({ TETHER_WORKER_ID: 'worker-a' });
    const runId = await d.submit([
      {
        toolCalls: [
          // It waits for the test's go, so it is still running when the SIGTERM comes, however slowly B starts.
          call('bash', {
            command: 'touch started1; while [ ! -f go ]; do sleep 0.05; done; echo a >> f.txt',
          }),
          call('bash', { command: 'echo b >> f.txt' }),
        ],
      },
      { content: 'done elsewhere' },
    ]);
    const workspace = join(d.workspaceRoot, runId);
    await until(() => existsSync(join(workspace, 'started1')), 'the first call to start');
    const b = await d.startWorker({ TETHER_WORKER_ID: 'worker-b' });
    const stopped = a.stop('SIGTERM');
    await until(() => a.output().includes('"msg":"worker shutting down"'), 'worker A to begin its shutdown');
    await writeFile(join(workspace, 'go'), '');
    expect(await stopped).toEqual({ code: 0, signal: null });
    expect(a.output()).toContain('run released for another worker');
    await d.waitForEvent(runId, 'run.completed', 30_000);
    await b.waitFor(/"msg":"run completed"/);
    expect(await readFile(join(workspace, 'f.txt'), 'utf8')).toBe('a\nb\n');
    const events = await d.store.readEvents(runId);
    assertOrdered(events);
    const results = events
      .filter((e) => e.type === 'tool.result')
      .map((e) => (e.data as { callId: string }).callId);
    expect(results).toEqual(['call_0_0', 'call_0_1']);
  }, 60_000);

  it('a subscriber that reconnects with its last event id receives every later event exactly once', async () => {
    const d = await deploy('reconnect');
    await d.startWorker();
    const steps = Array.from({ length: 8 }, (_, i) => ({
      toolCalls: [call('bash', { command: `echo step ${i}` })],
    }));
    const runId = await d.submit([...steps, { content: 'end' }]);
    const seen: RunEvent[] = [];
    // First connection: follow until a few events arrived, then drop it.
    let last = '0';
    const firstBatch = await d.store.readEvents(runId, '0');
    for (const e of firstBatch.slice(0, 3)) {
      seen.push(e);
      last = e.id;
    }
    // Reconnect: subscribe, read the backlog after the last id, then take live events after it.
    const done = new Promise<void>((resolve, reject) => {
      const buffered: RunEvent[] = [];
      let replaying = true;
      const deliver = (e: RunEvent) => {
        if (compare(e.id, last) <= 0) return;
        seen.push(e);
        last = e.id;
        if (e.type === 'run.completed') resolve();
      };
      d.hub
        .subscribe(runId, (e) => (replaying ? buffered.push(e) : deliver(e)))
        .then(async (unsubscribe) => {
          for (const e of await d.store.readEvents(runId, last)) deliver(e);
          replaying = false;
          for (const e of buffered) deliver(e);
          await done.finally(unsubscribe);
        })
        .catch(reject);
    });
    await done;
    const all = await d.store.readEvents(runId);
    expect(seen.map((e) => e.id)).toEqual(all.map((e) => e.id));
  });
});

function compare(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am - bm || as - bs;
}
