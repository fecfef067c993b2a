/**
 * The SDK's and the CLI's run management against a real API process and
 * worker: `client.delete` (409 while active, then gone), `client.retry` of a
 * cancelled run that then completes (`retryOf`), `client.list` by metadata
 * page by page; `tether runs --metadata`, `tether retry` and `tether rm`.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ReplayScript } from '@tether/protocol';
import { killAllSpawned } from '@tether/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TetherClient, TetherConflictError, TetherError, TetherNotFoundError } from '../src/index.js';
import { API_KEY, type Stack, startStack } from './stack.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const asks: ReplayScript = [
  { toolCalls: [{ name: 'clarify', arguments: { question: 'Which?', choices: ['a', 'b'] } }] },
  { content: 'answered' },
];

let stack: Stack;
let client: TetherClient;
beforeAll(async () => {
  stack = await startStack('client-runs');
  client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
}, 30_000);
afterAll(async () => {
  await stack?.stop();
  await killAllSpawned();
});

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TetherError && 'code' in error) return String(error.code);
    throw error;
  }
  return 'resolved';
}

function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', TETHER_URL: stack.baseUrl, TETHER_API_KEY: API_KEY, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out, err })));
}

describe('run management through the SDK and the CLI', () => {
  it('retries a cancelled run into one that completes, deletes the old one, and lists by metadata', async () => {
    const metadata = { suite: 'client-runs', kind: 'asks' };
    const { id } = await client.submit({
      input: 'ask me',
      model: { provider: 'replay', script: asks },
      metadata,
    });
    await client.wait(id, { until: 'input', intervalMs: 50 });
    await expect(client.delete(id)).rejects.toBeInstanceOf(TetherConflictError);
    expect(await codeOf(client.delete(id))).toBe('ERR_RUN_ACTIVE');
    expect(await codeOf(client.retry(id))).toBe('ERR_RUN_NOT_RETRYABLE');
    await client.cancel(id);
    expect((await client.wait(id, { intervalMs: 50 })).status).toBe('cancelled');

    const retried = await client.retry(id, { idempotencyKey: `retry-${id}` });
    expect(retried.id).not.toBe(id);
    expect((await client.retry(id, { idempotencyKey: `retry-${id}` })).id).toBe(retried.id);
    const waiting = await client.wait(retried.id, { until: 'input', intervalMs: 50 });
    expect(waiting).toMatchObject({ status: 'waiting_for_input', retryOf: id, metadata });
    await client.answer(retried.id, waiting.pendingClarify?.requestId as string, 'a');
    expect(await client.wait(retried.id, { intervalMs: 50 })).toMatchObject({
      status: 'completed',
      output: 'answered',
    });

    // Another run with one of the pairs only.
    const other = await client.submit({
      input: 'other',
      model: { provider: 'replay', script: [{ content: 'ok' }] },
      metadata: { suite: 'client-runs', kind: 'plain' },
    });
    await client.wait(other.id, { intervalMs: 50 });
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await client.list({
        metadata: { suite: 'client-runs' },
        limit: 1,
        ...(cursor ? { cursor } : {}),
      });
      pages.push(page.data.map((run) => run.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(pages.flat()).toEqual([other.id, retried.id, id]);
    expect((await client.list({ metadata })).data.map((run) => run.id)).toEqual([retried.id, id]);

    await client.delete(id);
    await expect(client.get(id)).rejects.toBeInstanceOf(TetherNotFoundError);
    expect((await client.list({ metadata })).data.map((run) => run.id)).toEqual([retried.id]);
    await expect(client.list({ metadata: { suite: 1 as unknown as string } })).rejects.toThrow(/metadata/);
  });

  it('tether runs --metadata, tether retry and tether rm', async () => {
    const { id } = await client.submit({
      input: 'cli',
      model: { provider: 'replay', script: asks },
      metadata: { suite: 'cli-runs' },
    });
    await client.wait(id, { until: 'input', intervalMs: 50 });
    const active = await cli(['rm', id]);
    expect(active.code).toBe(1);
    expect(active.err).toContain('ERR_RUN_ACTIVE');
    await client.cancel(id);
    await client.wait(id, { intervalMs: 50 });

    const retried = await cli(['retry', id, '--json']);
    expect(retried.code).toBe(0);
    const newId = (JSON.parse(retried.out) as { id: string }).id;
    const human = await cli(['retry', id]);
    expect(human.out).toMatch(/^Retrying run_\S+ as run_\S+\. Follow it: tether logs run_\S+ --follow\n$/);

    const listed = await cli(['runs', '--metadata', 'suite=cli-runs', '--json']);
    expect(listed.code).toBe(0);
    const ids = (JSON.parse(listed.out) as { data: { id: string }[] }).data.map((run) => run.id);
    expect(ids).toHaveLength(3);
    expect(ids).toContain(newId);
    const paged = await cli(['runs', '--metadata', 'suite=cli-runs', '--limit', '1']);
    expect(paged.out).toContain('More: tether runs --metadata "suite=cli-runs" --cursor run_');

    const removed = await cli(['rm', id]);
    expect(removed).toMatchObject({ code: 0, out: `Deleted ${id}.\n` });
    expect((await cli(['rm', id])).err).toContain('ERR_RUN_NOT_FOUND');
    const bad = await cli(['runs', '--metadata', 'no-equals']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--metadata must be key=value');
  });
});
