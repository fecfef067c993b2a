/**
 * Context compaction through a real worker process, against a fake OpenAI-compatible model with a
 * small context window that refuses a request past it as OpenAI does: a 200-turn run of large
 * tool results completes, compacting; with compaction off it fails with ERR_CONTEXT_EXHAUSTED;
 * killed right after a compaction, it resumes from the compacted checkpoint.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { countTokens, SUMMARY_PROMPT } from '@tether/agent';
import type { RunEvent } from '@tether/protocol';
import {
  type FakeBehavior,
  type FakeOpenAIServer,
  startFakeOpenAI,
  streamText,
  streamToolCalls,
} from '@tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type Deployment, TENANT, until, useDeployments } from './harness.js';

const deploy = useDeployments();

const WINDOW = 12_000;
/** About 800 tokens the model reads again and again. */
const BIG = Array.from({ length: 80 }, (_, i) => `line ${i} of the build log: ok`).join('\n');
const SUMMARY_HEADER_START = '[Summary of the earlier part of this conversation';

type Message = { role: string; content?: string | null };
const messagesOf = (body: Record<string, unknown>) => (body.messages ?? []) as Message[];
const isSummaryRequest = (body: Record<string, unknown>) => messagesOf(body)[0]?.content === SUMMARY_PROMPT;

let fake: FakeOpenAIServer | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/**
 * The fake model: a window of {@link WINDOW} tokens (listed by `GET /v1/models`, the profile names
 * no model nor window); it reads big.txt for `turns` turns, then answers `done`; a summarisation
 * request gets a summary. `hold` may hold a request (a hanging answer).
 */
async function smallModel(turns: number, hold?: (body: Record<string, unknown>, turn: number) => boolean) {
  let turn = 0;
  let summaries = 0;
  fake = await startFakeOpenAI({
    model: 'small-model',
    context: {
      tokens: WINDOW,
      count: (body) =>
        countTokens(JSON.stringify(body.messages ?? [])) + countTokens(JSON.stringify(body.tools ?? [])),
    },
    answer: (body): FakeBehavior => {
      if (isSummaryRequest(body)) {
        summaries++;
        return streamText(`Task: read big.txt 200 times. Progress: read it (summary ${summaries}).`);
      }
      turn++;
      if (hold?.(body, turn)) return { kind: 'hang' };
      if (turn > turns) return streamText('done');
      return streamToolCalls([{ name: 'read_file', arguments: JSON.stringify({ path: 'big.txt' }) }]);
    },
  });
  return fake;
}

async function start(d: Deployment, server: FakeOpenAIServer) {
  const profiles = [{ name: 'small', provider: 'openai', baseURL: server.baseURL, apiKey: 'sk-fake' }];
  return d.startWorker({ TETHER_MODEL_PROFILES: JSON.stringify(profiles) });
}

async function submit(d: Deployment, extra: Record<string, unknown> = {}) {
  const { run } = await d.service.submit(TENANT, {
    input: 'read big.txt 200 times',
    model: { profile: 'small' },
    toolsets: ['base'],
    files: { 'big.txt': BIG },
    limits: { maxSteps: 250 },
    ...extra,
  });
  return run.id;
}

const chatRequests = (server: FakeOpenAIServer) =>
  server.requests
    .filter((request) => request.method === 'POST')
    .map((request) => request.body as Record<string, unknown>);

describe('context compaction in a worker', () => {
  it('completes a 200-turn run of large tool results in a small window, compacting', async () => {
    const server = await smallModel(200);
    const d = await deploy('compaction-long');
    await start(d, server);
    const runId = await submit(d);
    await d.waitForEvent(runId, 'run.completed', 120_000);
    const events = await d.store.readEvents(runId);
    const compacted = events.filter((e) => e.type === 'context.compacted') as RunEvent<'context.compacted'>[];
    expect(compacted.length).toBeGreaterThan(3);
    expect(new Set(compacted.map((e) => e.data.strategy))).toEqual(new Set(['prune', 'summarise']));
    for (const { data } of compacted) {
      expect(data.window).toBe(WINDOW);
      expect(data.afterTokens).toBeLessThan(data.beforeTokens);
    }
    // The model never refused a request: every one fitted.
    expect(events.filter((e) => e.type === 'tool.result')).toHaveLength(200);
    const chats = chatRequests(server);
    expect(chats.filter((body) => !isSummaryRequest(body))).toHaveLength(201);

    // What the summariser was sent: the fixed prompt, the task, the transcript, no tools.
    const summary = chats.find(isSummaryRequest) as Record<string, unknown>;
    expect(summary.tools).toBeUndefined();
    const asked = messagesOf(summary)[1]?.content ?? '';
    expect(asked).toContain("The agent's task:\nread big.txt 200 times");
    expect(asked).toMatch(/ASSISTANT: \n-> called read_file\(\{"path":"big.txt"\}\)/);
    // The turn after it (and any further chunk's request) was given the summary in place of the turns.
    const after = chats.slice(chats.indexOf(summary)).find((body) => !isSummaryRequest(body)) ?? {};
    expect(messagesOf(after)[2]?.content).toContain(SUMMARY_HEADER_START);
    expect(messagesOf(after)[2]?.content).toMatch(/\(summary \d+\)/);

    // A pruned result says where the whole of it is, and it is there for read_file.
    const pruned = chats
      .flatMap(messagesOf)
      .find((message) => message.role === 'tool' && message.content?.startsWith('[pruned:'));
    const path = pruned?.content?.match(/read_file\("([^"]+)"\)/)?.[1] as string;
    expect(path).toMatch(/^\.tether\/context\/[\w-]+\.txt$/);
    const saved = (await readdir(d.workspaceRoot, { recursive: true })).find((file) => file.endsWith(path));
    // The whole tool result, as read_file gave it (numbered lines), its middle too.
    const whole = await readFile(join(d.workspaceRoot, saved as string), 'utf8');
    expect(whole).toContain('    41\tline 40 of the build log: ok\n');
    expect(pruned?.content).not.toContain('line 40 of the build log');

    // The run's usage counts the summarisation requests (each reported 7 output tokens).
    const run = await d.store.get(runId);
    expect(run?.usage?.outputTokens).toBe(7 * chats.length);
  });

  it('fails with ERR_CONTEXT_EXHAUSTED, saying so, when the run has compaction off', async () => {
    const server = await smallModel(200);
    const d = await deploy('compaction-off');
    await start(d, server);
    const runId = await submit(d, { compaction: false });
    const failed = (await d.waitForEvent(runId, 'run.failed', 60_000)) as RunEvent<'run.failed'>;
    expect(failed.data.error.code).toBe('ERR_CONTEXT_EXHAUSTED');
    expect(failed.data.error.message).toContain('compaction off');
    expect((await d.store.readEvents(runId)).some((e) => e.type === 'context.compacted')).toBe(false);
    expect(chatRequests(server).some(isSummaryRequest)).toBe(false);
  });

  it('resumes a run killed right after a compaction from the compacted checkpoint', async () => {
    let heldAt: number | undefined;
    // The first turn after the first summary hangs: the worker is killed while it waits.
    const server = await smallModel(40, (body, turn) => {
      const first = heldAt === undefined && messagesOf(body)[2]?.content?.startsWith(SUMMARY_HEADER_START);
      if (first) heldAt = turn;
      return first === true;
    });
    const d = await deploy('compaction-kill');
    const worker = await start(d, server);
    const runId = await submit(d);
    await d.waitForEvent(
      runId,
      (e) => e.type === 'context.compacted' && e.data.strategy === 'summarise',
      60_000,
    );
    await until(() => heldAt !== undefined, 'the turn after the summary to be asked');
    const held = chatRequests(server).at(-1) as Record<string, unknown>;
    worker.child.kill('SIGKILL');
    await start(d, server);
    await d.waitForEvent(runId, 'run.completed', 60_000);
    // The next owner's first request is the held one: the compacted transcript, summary and all.
    const chats = chatRequests(server);
    const resumed = chats[chats.indexOf(held) + 1] as Record<string, unknown>;
    expect(isSummaryRequest(resumed)).toBe(false);
    expect(messagesOf(resumed)).toEqual(messagesOf(held));
    const summaries = (await d.store.readEvents(runId)).filter(
      (e) => e.type === 'context.compacted' && e.data.strategy === 'summarise',
    );
    expect(summaries.length).toBeGreaterThanOrEqual(1);
  });
});
