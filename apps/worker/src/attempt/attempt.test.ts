import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Workspace } from '@tether/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeSubmittedFiles } from './prepare.js';
import { commandLeaseMs } from './run.js';

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
