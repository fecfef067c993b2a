/**
 * client.skills and `tether skills push|ls|rm` against a real API process
 * (and its worker) on the test Redis.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TetherApiError, TetherClient, TetherNotFoundError } from '../src/index.js';
import { API_KEY, type Stack, startStack } from './stack.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const run = promisify(execFile);

let stack: Stack;
let client: TetherClient;
let dir: string;
beforeAll(async () => {
  stack = await startStack('client-skills');
  client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
  dir = await mkdtemp(join(tmpdir(), 'tether-client-skills-'));
}, 30_000);
afterAll(async () => {
  await stack?.stop();
  await rm(dir, { recursive: true, force: true });
});

const skillMd = (name: string, description = `Does ${name}.`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\nSteps.\n`;

/** The CLI, as a user runs it: its exit code and what it printed. */
async function tether(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], {
      env: { ...process.env, TETHER_URL: stack.baseUrl, TETHER_API_KEY: API_KEY, NO_COLOR: '1' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('client.skills', () => {
  it('puts, gets, lists and deletes a skill; a bad one and a missing one are typed errors', async () => {
    const files = { 'SKILL.md': skillMd('sdk-skill'), 'references/notes.md': 'notes' };
    const put = await client.skills.put('sdk-skill', { files, pinned: true });
    expect(put).toMatchObject({ name: 'sdk-skill', pinned: true, fileCount: 2 });
    expect(await client.skills.get('sdk-skill')).toEqual({ ...put, files });
    expect((await client.skills.list()).data.map((s) => s.name)).toContain('sdk-skill');
    const bad = await client.skills
      .put('sdk-skill', { files: { 'SKILL.md': 'no frontmatter' } })
      .catch((e) => e);
    expect(bad).toBeInstanceOf(TetherApiError);
    expect(bad).toMatchObject({ code: 'ERR_SKILL_INVALID', status: 400 });
    await client.skills.delete('sdk-skill');
    await expect(client.skills.get('sdk-skill')).rejects.toBeInstanceOf(TetherNotFoundError);
    await expect(client.skills.delete('sdk-skill')).rejects.toBeInstanceOf(TetherNotFoundError);
  });
});

describe('tether skills', () => {
  it('pushes a folder (its text files; a binary one skipped, said so), lists it and removes it', async () => {
    const folder = join(dir, 'release-notes');
    await mkdir(join(folder, 'scripts'), { recursive: true });
    await writeFile(
      join(folder, 'SKILL.md'),
      skillMd('release-notes', 'Writes release notes from merged PRs.'),
    );
    await writeFile(join(folder, 'scripts', 'collect.sh'), '#!/bin/sh\ngit log --merges\n');
    await writeFile(join(folder, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]));

    const pushed = await tether('skills', 'push', folder, '--pinned');
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(pushed.stdout).toMatch(/^Created skill release-notes: version \d+, 2 files, \d+ B, pinned\.\n$/);
    expect(pushed.stderr).toContain('skipped logo.png (not text: a skill holds text files)');
    expect((await client.skills.get('release-notes')).files).toEqual({
      'SKILL.md': skillMd('release-notes', 'Writes release notes from merged PRs.'),
      'scripts/collect.sh': '#!/bin/sh\ngit log --merges\n',
    });
    const again = await tether('skills', 'push', folder, '--no-pinned');
    expect(again.stdout).toMatch(/^Replaced skill release-notes: version \d+, 2 files, \d+ B\.\n$/);
    expect((await client.skills.get('release-notes')).pinned).toBe(false);

    const listed = await tether('skills', 'ls');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^NAME +FILES +SIZE +UPDATED +DESCRIPTION\n/);
    expect(listed.stdout).toMatch(/^release-notes +2 +\d+ B .+Writes release notes from merged PRs\.$/m);
    expect(listed.stdout).toMatch(/\d+ of 200 skills, .+ of 50 MiB\n$/);
    const json = JSON.parse((await tether('skills', 'ls', '--json')).stdout) as { data: { name: string }[] };
    expect(json.data.map((s) => s.name)).toContain('release-notes');

    expect(await tether('skills', 'rm', 'release-notes')).toMatchObject({
      code: 0,
      stdout: 'Deleted skill release-notes.\n',
    });
    const gone = await tether('skills', 'rm', 'release-notes');
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('ERR_SKILL_NOT_FOUND');
  });

  it('says what is wrong with a folder the API refuses, or one that is missing', async () => {
    const folder = join(dir, 'Bad_Name');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'SKILL.md'), skillMd('bad-name'));
    const refused = await tether('skills', 'push', folder);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('ERR_VALIDATION');
    const renamed = await tether('skills', 'push', folder, '--name', 'bad-name');
    expect(renamed.code, renamed.stderr).toBe(0);
    const other = await tether('skills', 'push', folder, '--name', 'other-name');
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(
      'SKILL.md\'s name "bad-name" must be the skill\'s folder name, "other-name".',
    );
    const missing = await tether('skills', 'push', join(dir, 'nope'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such directory');
  });
});
