import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initialCheckpoint } from '@tether/agent';
import { TetherError } from '@tether/protocol';
import { Workspace } from '@tether/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeSubmittedFiles } from './prepare.js';
import { commandLeaseMs, toSettlement } from './run.js';

let base: string;

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'tether-files-'));
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('writeSubmittedFiles', () => {
  it('writes nested files inside the workspace', async () => {
    const workspace = join(base, 'ws');
    expect(
      await writeSubmittedFiles(new Workspace(workspace), { 'a.txt': 'A', 'src/b.ts': 'B' }),
    ).toBeUndefined();
    expect(await readFile(join(workspace, 'src/b.ts'), 'utf8')).toBe('B');
  });

  it('refuses a path outside the workspace with ERR_WORKER_FILES', async () => {
    const problem = await writeSubmittedFiles(new Workspace(join(base, 'ws')), { '../escape.txt': 'x' });
    expect(problem?.code).toBe('ERR_WORKER_FILES');
    expect(problem?.message).toContain('"../escape.txt"');
  });

  it('fails with its own code, naming the file and the cause, when a file cannot be written', async () => {
    const workspace = join(base, 'ws');
    await mkdir(join(workspace, 'taken'), { recursive: true });
    const problem = await writeSubmittedFiles(new Workspace(workspace), { taken: 'x' });
    expect(problem?.code).toBe('ERR_WORKER_FILE_WRITE');
    expect(problem?.message).toContain('"taken"');
    expect(problem?.message).toContain('is a directory');
    // No absolute path of the host in what the client sees.
    expect(problem?.message).not.toContain(base);
  });
});

describe('commandLeaseMs', () => {
  it('is a quarter of the lock, at least 500 ms', () => {
    expect(commandLeaseMs(15_000)).toBe(3750);
    expect(commandLeaseMs(1_000)).toBe(500);
  });
});

describe('toSettlement', () => {
  const checkpoint = initialCheckpoint({ systemPrompt: 's', input: 'u' });
  const failed = (error: TetherError) => ({ status: 'failed' as const, error });

  it('maps what the loop returns, and why the worker stopped it, to how the run ends', () => {
    expect(toSettlement({ status: 'completed', output: 'ok' }, checkpoint, undefined)).toEqual({
      kind: 'completed',
      output: 'ok',
      checkpoint,
    });
    const result = { verdict: 'pass' };
    expect(toSettlement({ status: 'completed', output: 'ok', result }, checkpoint, undefined)).toEqual({
      kind: 'completed',
      output: 'ok',
      checkpoint,
      result,
    });
    expect(toSettlement({ status: 'cancelled' }, checkpoint, undefined)).toEqual({ kind: 'cancelled' });
    expect(toSettlement({ status: 'cancelled' }, checkpoint, 'shutdown')).toEqual({
      kind: 'released',
      why: 'shutdown',
    });
    expect(toSettlement({ status: 'cancelled' }, checkpoint, 'lost')).toMatchObject({
      kind: 'lost',
      handBack: true,
    });
    expect(
      toSettlement(failed(new TetherError('ERR_RUN_CANCEL_REQUESTED', 'c')), checkpoint, undefined),
    ).toEqual({ kind: 'cancelled' });
    expect(
      toSettlement(failed(new TetherError('ERR_RUN_NOT_OWNER', 'n')), checkpoint, undefined),
    ).toMatchObject({
      kind: 'lost',
      handBack: true,
    });
  });

  it('keeps a failure retryable only when its error says so', () => {
    const retryable = new TetherError('ERR_MODEL_UNAVAILABLE', 'down', { retryable: true });
    expect(toSettlement(failed(retryable), checkpoint, undefined)).toMatchObject({
      kind: 'failed',
      retryable: true,
      error: { code: 'ERR_MODEL_UNAVAILABLE', message: 'down' },
      usage: checkpoint.usage,
    });
    expect(toSettlement(failed(new TetherError('ERR_X', 'no')), checkpoint, undefined)).toMatchObject({
      kind: 'failed',
      retryable: false,
    });
  });

  it('carries a suspension as the question the run waits on, without the call id', () => {
    const clarify = {
      requestId: 'clr_1',
      callId: 'call_0',
      question: 'Q?',
      choices: ['a'],
      expiresAt: '2030-01-01T00:00:00.000Z',
    };
    expect(toSettlement({ status: 'suspended', clarify }, checkpoint, undefined)).toEqual({
      kind: 'waiting',
      on: 'question',
      open: { requestId: 'clr_1', question: 'Q?', choices: ['a'], expiresAt: '2030-01-01T00:00:00.000Z' },
    });
  });
});
