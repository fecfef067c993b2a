import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection, keySlot } from '../src/redis/index.js';
import { SkillStore } from '../src/skills/index.js';

/**
 * A tenant's skills against the real scripts (on a Redis Cluster too: a
 * tenant's keys share one hash slot): every branch of saveSkill, deleteSkill
 * and readSkill, the limits checked in the step, and the tenant's version
 * and bytes kept with every change.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'skill-store', onError: () => {} });
afterAll(() => redis.quit());
const keys = createKeys(uniquePrefix('skills'));
const limits = { maxCount: 3, maxBytes: 1_000, maxFiles: 4 };
const store = new SkillStore({ redis, keys, limits });

let tenants = 0;
/** A tenant of its own for each test. */
const tenant = () => `t${++tenants}-${Date.now().toString(36)}`;

const md = (name: string, description = `What ${name} does`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\nSteps.\n`;

function create(t: string, name: string, files: Record<string, string> = {}, pinned?: boolean) {
  const set = { 'SKILL.md': md(name), ...files };
  return store.save(t, { name, mode: 'create', set, description: `What ${name} does`, pinned });
}

const bytesOf = (files: Record<string, string>) =>
  Object.values(files).reduce((sum, text) => sum + Buffer.byteLength(text), 0);

describe('skill store', () => {
  it('puts every key of a tenant in one hash slot, and two tenants apart', () => {
    const a = keys.skills('acme');
    expect(new Set([a.index, a.totals, a.files('x'), a.files('y')].map(keySlot)).size).toBe(1);
    expect(a.index).toBe(`${keys.namespace}:skills:{k_acme}:index`);
    expect(keys.skills('beta').index).not.toBe(a.index);
  });

  it('creates a skill: its files, its summary, the tenant version and bytes', async () => {
    const t = tenant();
    const files = { 'scripts/run.sh': '#!/bin/sh\necho hé\n' };
    const created = await create(t, 'alpha', files);
    expect(created).toMatchObject({
      ok: true,
      created: true,
      skill: { name: 'alpha', description: 'What alpha does', pinned: false, version: 1, fileCount: 2 },
    });
    const all = { 'SKILL.md': md('alpha'), ...files };
    expect(created.ok && created.skill.bytes).toBe(bytesOf(all));
    expect(await store.get(t, 'alpha')).toMatchObject({ name: 'alpha', files: all });
    const index = await store.list(t);
    expect(index).toMatchObject({ version: 1, bytes: bytesOf(all) });
    expect(index.skills.map((s) => s.name)).toEqual(['alpha']);
    expect(await store.version(t)).toBe(1);
    // Again: it exists, nothing changes.
    expect(await create(t, 'alpha')).toEqual({ ok: false, refusal: 'exists' });
    expect(await store.version(t)).toBe(1);
  });

  it('replaces every file, keeping createdAt and the pinned setting unless told', async () => {
    const t = tenant();
    const first = await create(t, 'alpha', { 'a.txt': 'a', 'b.txt': 'b' }, true);
    const replaced = await store.save(t, {
      name: 'alpha',
      mode: 'replace',
      set: { 'SKILL.md': md('alpha', 'New'), 'c.txt': 'ccc' },
      description: 'New',
    });
    expect(replaced).toMatchObject({ ok: true, created: false, skill: { pinned: true, description: 'New' } });
    expect(replaced.ok && first.ok && replaced.skill.createdAt).toBe(first.ok && first.skill.createdAt);
    expect((await store.get(t, 'alpha'))?.files).toEqual({ 'SKILL.md': md('alpha', 'New'), 'c.txt': 'ccc' });
    expect((await store.list(t)).bytes).toBe(bytesOf({ a: md('alpha', 'New'), c: 'ccc' }));
    const unpinned = await store.save(t, {
      name: 'alpha',
      mode: 'replace',
      set: { 'SKILL.md': md('alpha') },
      description: 'What alpha does',
      pinned: false,
    });
    expect(unpinned.ok && unpinned.skill.pinned).toBe(false);
    // replace creates a skill that does not exist.
    expect(
      await store.save(t, {
        name: 'beta',
        mode: 'replace',
        set: { 'SKILL.md': md('beta') },
        description: 'b',
      }),
    ).toMatchObject({ ok: true, created: true });
  });

  it('updates some files: sets and removes, with the sizes and counts kept, the description kept', async () => {
    const t = tenant();
    await create(t, 'alpha', { 'a.txt': 'aaaa', 'b.txt': 'b' });
    const updated = await store.save(t, {
      name: 'alpha',
      mode: 'update',
      set: { 'a.txt': 'a', 'c.txt': 'cc' },
      remove: ['b.txt'],
    });
    expect(updated).toMatchObject({
      ok: true,
      skill: { description: 'What alpha does', fileCount: 3, version: 2 },
    });
    const files = { 'SKILL.md': md('alpha'), 'a.txt': 'a', 'c.txt': 'cc' };
    expect((await store.get(t, 'alpha'))?.files).toEqual(files);
    expect(updated.ok && updated.skill.bytes).toBe(bytesOf(files));
    expect((await store.list(t)).bytes).toBe(bytesOf(files));
    expect(await store.save(t, { name: 'alpha', mode: 'update', set: {}, remove: ['gone.txt'] })).toEqual({
      ok: false,
      refusal: 'no_file',
      path: 'gone.txt',
    });
    expect(await store.save(t, { name: 'nope', mode: 'update', set: { 'a.txt': 'a' } })).toEqual({
      ok: false,
      refusal: 'missing',
    });
  });

  it('refuses an update that would put a file inside another file, either way round, and writes nothing', async () => {
    const t = tenant();
    await create(t, 'alpha', { scripts: 'a file named scripts' });
    expect(await store.save(t, { name: 'alpha', mode: 'update', set: { 'scripts/go.sh': 'echo' } })).toEqual({
      ok: false,
      refusal: 'clash',
      file: 'scripts',
      path: 'scripts/go.sh',
    });
    await create(t, 'beta', { 'scripts/go.sh': 'echo' });
    expect(await store.save(t, { name: 'beta', mode: 'update', set: { scripts: 'x' } })).toMatchObject({
      ok: false,
      refusal: 'clash',
      file: 'scripts',
    });
    expect(Object.keys((await store.get(t, 'alpha'))?.files ?? {}).sort()).toEqual(['SKILL.md', 'scripts']);
    // Removing the file in the same update frees its name for a folder.
    const moved = await store.save(t, {
      name: 'alpha',
      mode: 'update',
      set: { 'scripts/go.sh': 'echo' },
      remove: ['scripts'],
    });
    expect(moved.ok).toBe(true);
  });

  it('refuses a change of a skill that changed since it was read (ifVersion)', async () => {
    const t = tenant();
    const created = await create(t, 'alpha');
    const version = created.ok ? created.skill.version : 0;
    await store.save(t, { name: 'alpha', mode: 'update', set: { 'x.txt': 'x' } });
    expect(
      await store.save(t, { name: 'alpha', mode: 'update', set: { 'y.txt': 'y' }, ifVersion: version }),
    ).toEqual({ ok: false, refusal: 'changed', version: version + 1 });
    expect(
      await store.save(t, { name: 'alpha', mode: 'update', set: { 'y.txt': 'y' }, ifVersion: version + 1 }),
    ).toMatchObject({ ok: true });
    expect(await store.save(t, { name: 'gone', mode: 'replace', set: {}, ifVersion: 3 })).toEqual({
      ok: false,
      refusal: 'missing',
    });
  });

  it('keeps pinned skills from the agent: no change, no delete; the API may', async () => {
    const t = tenant();
    await create(t, 'alpha', {}, true);
    const byAgent = { name: 'alpha', mode: 'update' as const, set: { 'x.txt': 'x' }, byAgent: true };
    expect(await store.save(t, byAgent)).toEqual({ ok: false, refusal: 'pinned' });
    expect(await store.delete(t, 'alpha', { byAgent: true })).toBe('pinned');
    expect(await store.version(t)).toBe(1);
    expect(await store.save(t, { ...byAgent, byAgent: false })).toMatchObject({ ok: true });
    expect(await store.delete(t, 'alpha')).toBe('ok');
    expect(await store.delete(t, 'alpha')).toBe('missing');
  });

  it('checks the tenant limits in the step: skills, bytes, files per skill', async () => {
    const t = tenant();
    for (const name of ['a', 'b', 'c']) expect((await create(t, name)).ok).toBe(true);
    expect(await create(t, 'd')).toEqual({ ok: false, refusal: 'count', value: 3, max: 3 });
    // A replace of one that exists is no new skill.
    expect(
      await store.save(t, { name: 'a', mode: 'replace', set: { 'SKILL.md': md('a') }, description: 'x' }),
    ).toMatchObject({ ok: true });
    const { bytes } = await store.list(t);
    const big = 'x'.repeat(limits.maxBytes - bytes + 1);
    expect(await store.save(t, { name: 'a', mode: 'update', set: { 'big.txt': big } })).toEqual({
      ok: false,
      refusal: 'bytes',
      value: limits.maxBytes + 1,
      max: limits.maxBytes,
    });
    expect(
      await store.save(t, { name: 'a', mode: 'update', set: { 'big.txt': big.slice(1) } }),
    ).toMatchObject({
      ok: true,
    });
    expect((await store.list(t)).bytes).toBe(limits.maxBytes);
    expect(
      await store.save(t, { name: 'b', mode: 'update', set: { '1': '', '2': '', '3': '', '4': '' } }),
    ).toEqual({ ok: false, refusal: 'files', value: 5, max: 4 });
    // A delete frees its bytes and its place.
    expect(await store.delete(t, 'a')).toBe('ok');
    expect((await create(t, 'd')).ok).toBe(true);
    expect((await store.list(t)).bytes).toBe(bytesOf({ b: md('b'), c: md('c'), d: md('d') }));
  });

  it('reads a skill for read_skill (SKILL.md and every path with its size) and one file', async () => {
    const t = tenant();
    await create(t, 'alpha', { 'scripts/run.sh': 'échо', 'references/r.md': 'r' });
    const view = await store.view(t, 'alpha');
    expect(view?.skillMd).toBe(md('alpha'));
    expect(view?.files).toEqual([
      { path: 'SKILL.md', bytes: Buffer.byteLength(md('alpha')) },
      { path: 'references/r.md', bytes: 1 },
      { path: 'scripts/run.sh', bytes: Buffer.byteLength('échо') },
    ]);
    expect(await store.view(t, 'nope')).toBeUndefined();
    expect(await store.readFile(t, 'alpha', 'scripts/run.sh')).toEqual({
      skill: view?.skill,
      content: 'échо',
    });
    expect((await store.readFile(t, 'alpha', 'nope.txt'))?.content).toBeNull();
    expect(await store.readFile(t, 'nope', 'SKILL.md')).toBeUndefined();
  });

  it('snapshots every file of every skill of one version', async () => {
    const t = tenant();
    expect(await store.snapshot(t)).toEqual({ version: 0, skills: [] });
    await create(t, 'beta', { 'b.txt': 'b' });
    await create(t, 'alpha');
    expect(await store.snapshot(t)).toEqual({
      version: 2,
      skills: [
        { name: 'alpha', files: { 'SKILL.md': md('alpha') } },
        { name: 'beta', files: { 'SKILL.md': md('beta'), 'b.txt': 'b' } },
      ],
    });
  });

  it("keeps tenants apart: another tenant's list, reads and deletes see nothing", async () => {
    const [a, b] = [tenant(), tenant()];
    await create(a, 'alpha');
    expect((await store.list(b)).skills).toEqual([]);
    expect(await store.get(b, 'alpha')).toBeUndefined();
    expect(await store.view(b, 'alpha')).toBeUndefined();
    expect(await store.readFile(b, 'alpha', 'SKILL.md')).toBeUndefined();
    expect(await store.delete(b, 'alpha')).toBe('missing');
    expect(await store.save(b, { name: 'alpha', mode: 'update', set: { x: 'x' } })).toEqual({
      ok: false,
      refusal: 'missing',
    });
    expect((await store.list(a)).skills.map((s) => s.name)).toEqual(['alpha']);
  });
});
