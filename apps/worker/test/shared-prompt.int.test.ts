/**
 * The system prompt's shared part (its tool-use rules and behaviour blocks) is stored once in Redis
 * by its hash and left out of each checkpoint: a run resumed on a worker that never saw it gets its
 * system prompt back exactly, from the stored part, from this release's text when the stored part
 * is gone, and from a checkpoint stored whole (version 1) as before.
 */
import { startFakeOpenAI, streamText, streamToolCalls } from '@tether/testing';
import { describe, expect, it } from 'vitest';
import { type Deployment, TENANT, useDeployments } from './harness.js';

const deploy = useDeployments();

interface FakeMessage {
  role: string;
  content: string;
}

type Fake = Awaited<ReturnType<typeof startFakeOpenAI>>;

const modelEnv = (fake: Fake) => ({
  TETHER_MODEL: 'fake-model',
  OPENAI_BASE_URL: fake.baseURL,
  OPENAI_API_KEY: 'sk-fake',
});

/** The system message the model got with its request number `index`. */
function systemOf(fake: Fake, index: number): string {
  const body = fake.requests[index]?.body as { messages: FakeMessage[] };
  const [system] = body.messages;
  expect(system?.role).toBe('system');
  return system?.content ?? '';
}

/** A run on the model that asks a question, suspended; resolves with its question's id. */
async function suspendedRun(d: Deployment, fake: Fake, input: string) {
  fake.enqueue(streamToolCalls([{ id: `c_${input}`, name: 'clarify', arguments: '{"question":"Which?"}' }]));
  const { run } = await d.service.submit(TENANT, { input, clarify: { timeoutMs: 60_000 } });
  const requested = await d.waitForEvent(run.id, 'clarify.requested');
  for (;;) {
    if ((await d.store.getRecord(run.id))?.status === 'waiting_for_input') break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { runId: run.id, requestId: (requested.data as { requestId: string }).requestId };
}

/** Answers on a worker started now (nothing cached), and checks the run completes. */
async function resumeOnNewWorker(d: Deployment, fake: Fake, run: { runId: string; requestId: string }) {
  const worker = await d.startWorker(modelEnv(fake));
  fake.enqueue(streamText('done'));
  await d.service.answer(TENANT, run.runId, run.requestId, 'that one');
  await d.waitForEvent(run.runId, 'run.completed');
  await worker.stop();
}

async function storedCheckpoint(d: Deployment, runId: string) {
  return JSON.parse((await d.store.loadCheckpoint(runId)) ?? '{}') as {
    version: number;
    messages: FakeMessage[];
    shared?: { ref: string; at: number };
  };
}

describe("the system prompt's shared part", () => {
  it('is stored once for runs with the same tools, and a run resumed elsewhere gets its prompt back exactly', async () => {
    const fake = await startFakeOpenAI();
    try {
      const d = await deploy('shared-prompt');
      const first = await d.startWorker(modelEnv(fake));
      const a = await suspendedRun(d, fake, 'a');
      const b = await suspendedRun(d, fake, 'b');
      await first.stop();
      const original = systemOf(fake, 0);
      expect(original).toContain(a.runId);

      const [storedA, storedB] = [await storedCheckpoint(d, a.runId), await storedCheckpoint(d, b.runId)];
      expect(storedA.version).toBe(2);
      expect(storedA.shared?.ref).toBe(storedB.shared?.ref);
      const ref = storedA.shared?.ref as string;
      const part = (await d.redis.get(d.keys.sharedPrompt(ref))) as string;
      expect(part.length).toBeGreaterThan(1_000);
      expect(original.slice(storedA.shared?.at, (storedA.shared?.at ?? 0) + part.length)).toBe(part);
      expect(storedA.messages[0]?.content).not.toContain(part);
      // It outlives the longest retention of a run (365 days).
      expect(await d.redis.ttl(d.keys.sharedPrompt(ref))).toBeGreaterThan(399 * 24 * 3600);

      await resumeOnNewWorker(d, fake, a);
      expect(systemOf(fake, 2)).toBe(original);
      await resumeOnNewWorker(d, fake, b);
      expect(systemOf(fake, 3)).toBe(systemOf(fake, 1));
    } finally {
      await fake.close();
    }
  }, 60_000);

  it('gone from Redis: the run goes on with the same text, this release having it', async () => {
    const fake = await startFakeOpenAI();
    try {
      const d = await deploy('shared-prompt-gone');
      const first = await d.startWorker(modelEnv(fake));
      const run = await suspendedRun(d, fake, 'a');
      await first.stop();
      const ref = (await storedCheckpoint(d, run.runId)).shared?.ref as string;
      expect(await d.redis.del(d.keys.sharedPrompt(ref))).toBe(1);

      await resumeOnNewWorker(d, fake, run);
      expect(systemOf(fake, 1)).toBe(systemOf(fake, 0));
      // Kept again for the checkpoints that name it.
      expect(await d.redis.exists(d.keys.sharedPrompt(ref))).toBe(1);
    } finally {
      await fake.close();
    }
  }, 60_000);

  it('a checkpoint stored whole, as before it (version 1), resumes as it was', async () => {
    const fake = await startFakeOpenAI();
    try {
      const d = await deploy('shared-prompt-v1');
      const first = await d.startWorker(modelEnv(fake));
      const run = await suspendedRun(d, fake, 'a');
      await first.stop();
      const original = systemOf(fake, 0);
      const { shared, ...stored } = await storedCheckpoint(d, run.runId);
      const whole = {
        ...stored,
        version: 1,
        messages: [{ role: 'system', content: original }, ...stored.messages.slice(1)],
      };
      expect(shared).toBeDefined();
      await d.redis.set(d.keys.run(run.runId).checkpoint, JSON.stringify(whole));

      await resumeOnNewWorker(d, fake, run);
      expect(systemOf(fake, 1)).toBe(original);
    } finally {
      await fake.close();
    }
  }, 60_000);
});
