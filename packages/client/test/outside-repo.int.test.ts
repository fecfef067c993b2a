/**
 * The CLI used from outside the repository: `pnpm tether` typed in another
 * directory reads its paths there.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeApi } from '../src/testing/fake-api.js';

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `tether-${name}-`));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('pnpm tether typed in another directory', () => {
  it('reads --files and --replay there, not in the repository root', async () => {
    const api = new FakeApi();
    api.keys.set('key-a', 'tenant-a');
    await api.start();
    cleanups.push(() => api.close());
    api.onSubmit = (run) => api.append(run.run.id, 'run.completed', { output: 'done' });
    const caller = await tempDir('caller');
    await mkdir(join(caller, 'project'));
    await writeFile(join(caller, 'project', 'notes.txt'), 'from the caller\n');
    await writeFile(join(caller, 'script.json'), JSON.stringify([{ content: 'done' }]));

    const args = [
      '--dir',
      ROOT,
      'tether',
      'run',
      'x',
      '--replay',
      'script.json',
      '--files',
      'project',
      '--json',
    ];
    const env = { ...process.env, TETHER_URL: api.baseUrl, TETHER_API_KEY: 'key-a', NO_COLOR: '1' };
    await execFileAsync('pnpm', args, { cwd: caller, env });

    const submit = api.requests.find((r) => r.method === 'POST' && r.path === '/v1/runs');
    expect(submit?.body).toEqual({
      input: 'x',
      model: { provider: 'replay', script: [{ content: 'done' }] },
      files: { 'notes.txt': 'from the caller\n' },
    });
  });
});
