import { newId } from '@tether/protocol';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../src/memory/index.js';
import { createKeys, createRedisConnection } from '../src/redis/index.js';

/**
 * Memory scopes against the real scripts (on a Redis Cluster too: a scope's
 * keys share its hash slot): saves, replacements, duplicates, limits,
 * deletes and clears; ranking; and copies of a scope in other processes
 * (other stores) that follow every write, entry by entry or whole.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'memory-store', onError: () => {} });
afterAll(() => redis.quit());
const keys = createKeys(uniquePrefix('mem'));
const store = (options: { maxEntries?: number; maxBytes?: number } = {}) =>
  new MemoryStore({ redis, keys, ...options });
/** A scope no other test uses. */
const scope = () => `s-${newId('mem').slice(-10)}`;
const TENANT = 'acme';

async function saved(memory: MemoryStore, where: string, content: string, tags: string[] = []) {
  const outcome = await memory.save(TENANT, where, { content, tags });
  if (outcome.status !== 'saved') throw new Error(`not saved: ${JSON.stringify(outcome)}`);
  return outcome.record;
}

describe('saving', () => {
  it('stores an entry with its tags (once each) and times, and recalls it', async () => {
    const memory = store();
    const where = scope();
    const before = Date.now();
    const outcome = await memory.save(TENANT, where, {
      content: 'The user prefers pnpm.',
      tags: ['tools', 'tools'],
    });
    expect(outcome).toMatchObject({ status: 'saved', replaced: false });
    if (outcome.status !== 'saved') return;
    const { record } = outcome;
    expect(record.id).toMatch(/^mem_[0-9a-z]{26}$/);
    expect(record.tags).toEqual(['tools']);
    expect(record.createdAt).toBe(record.updatedAt);
    expect(record.createdAt).toBeGreaterThanOrEqual(before - 1_000);
    expect(await memory.recall(TENANT, where, 'pnpm', 10)).toEqual([record]);
  });

  it('refuses an exact duplicate, naming the entry that holds it', async () => {
    const memory = store();
    const where = scope();
    const first = await saved(memory, where, 'Deploys go through make release.');
    expect(
      await memory.save(TENANT, where, { content: 'Deploys go through make release.', tags: ['x'] }),
    ).toEqual({
      status: 'duplicate',
      id: first.id,
    });
    // Not a duplicate: other text, even by one character.
    expect((await memory.save(TENANT, where, { content: 'Deploys go through make release!' })).status).toBe(
      'saved',
    );
  });

  it('replaces an entry in place: same id and creation time, new content, tags and date; the old content is free again', async () => {
    const memory = store();
    const where = scope();
    const old = await saved(memory, where, 'Node 18 in CI.', ['ci']);
    const outcome = await memory.save(TENANT, where, {
      content: 'Node 20 in CI.',
      tags: ['ci', 'node'],
      replaces: old.id,
    });
    expect(outcome).toMatchObject({ status: 'saved', replaced: true });
    if (outcome.status !== 'saved') return;
    expect(outcome.record).toMatchObject({ id: old.id, createdAt: old.createdAt, tags: ['ci', 'node'] });
    expect(outcome.record.updatedAt).toBeGreaterThan(old.updatedAt);
    expect(await memory.recall(TENANT, where, '', 10)).toEqual([outcome.record]);
    expect((await memory.save(TENANT, where, { content: 'Node 18 in CI.' })).status).toBe('saved');
    // The same content over its own entry changes its tags.
    const retagged = await memory.save(TENANT, where, {
      content: 'Node 20 in CI.',
      tags: [],
      replaces: old.id,
    });
    expect(retagged).toMatchObject({ status: 'saved', record: { id: old.id, tags: [] } });
  });

  it('refuses to replace an entry the scope does not hold, or to take the content of another', async () => {
    const memory = store();
    const where = scope();
    const a = await saved(memory, where, 'a fact');
    const b = await saved(memory, where, 'b fact');
    const gone = newId('mem');
    expect(await memory.save(TENANT, where, { content: 'x', replaces: gone })).toEqual({
      status: 'missing',
      id: gone,
    });
    expect(await memory.save(TENANT, where, { content: 'a fact', replaces: b.id })).toEqual({
      status: 'duplicate',
      id: a.id,
    });
    // In another scope, the id is unknown.
    expect((await memory.save(TENANT, scope(), { content: 'y', replaces: a.id })).status).toBe('missing');
  });

  it('refuses a new entry past the most entries, listing the oldest first with their first words; a replacement still goes', async () => {
    const memory = store({ maxEntries: 6 });
    const where = scope();
    const records = [];
    for (let i = 0; i < 6; i++) {
      records.push(await saved(memory, where, `Fact number ${i}: ${'word '.repeat(20)}end`));
    }
    const full = await memory.save(TENANT, where, { content: 'one more' });
    expect(full).toMatchObject({ status: 'full', limit: 'entries', max: 6 });
    if (full.status !== 'full') return;
    expect(full.oldest.map((entry) => entry.id)).toEqual(records.slice(0, 5).map((record) => record.id));
    expect(full.oldest[0]?.preview).toBe('Fact number 0: word word word word word word word word word…');
    expect(await memory.recall(TENANT, where, '', 50)).toHaveLength(6);
    const replaced = await memory.save(TENANT, where, { content: 'one more', replaces: records[0]?.id });
    expect(replaced.status).toBe('saved');
  });

  it('refuses a save past the most bytes, counting each entry as its stored JSON', async () => {
    const memory = store({ maxBytes: 1_050 });
    const where = scope();
    const first = await saved(memory, where, 'x'.repeat(400));
    await saved(memory, where, 'y'.repeat(400));
    expect(await memory.save(TENANT, where, { content: 'z'.repeat(100) })).toMatchObject({
      status: 'full',
      limit: 'bytes',
      max: 1_050,
    });
    // A replacement counts the entry it replaces: shorter goes, longer does not.
    expect((await memory.save(TENANT, where, { content: 'short', replaces: first.id })).status).toBe('saved');
    expect(await memory.save(TENANT, where, { content: 'w'.repeat(900), replaces: first.id })).toMatchObject({
      status: 'full',
      limit: 'bytes',
    });
    expect((await memory.save(TENANT, where, { content: 'z'.repeat(100) })).status).toBe('saved');
  });

  it('refuses content over 2,000 characters or empty before asking Redis', async () => {
    const memory = store();
    await expect(memory.save(TENANT, scope(), { content: 'x'.repeat(2_001) })).rejects.toThrow(RangeError);
    await expect(memory.save(TENANT, scope(), { content: '' })).rejects.toThrow(RangeError);
  });
});

describe('deleting', () => {
  it('deletes one entry (then its content may be saved again), or answers false', async () => {
    const memory = store();
    const where = scope();
    const a = await saved(memory, where, 'a');
    const b = await saved(memory, where, 'b');
    expect(await memory.delete(TENANT, where, a.id)).toBe(true);
    expect(await memory.delete(TENANT, where, a.id)).toBe(false);
    expect(await memory.recall(TENANT, where, '', 10)).toEqual([b]);
    expect((await memory.save(TENANT, where, { content: 'a' })).status).toBe('saved');
  });

  it('clears a scope, frees its bytes, and counts what it deleted', async () => {
    const memory = store({ maxBytes: 600 });
    const where = scope();
    await saved(memory, where, 'x'.repeat(400));
    expect(await memory.clear(TENANT, where)).toBe(1);
    expect(await memory.clear(TENANT, where)).toBe(0);
    expect(await memory.recall(TENANT, where, '', 10)).toEqual([]);
    expect((await memory.save(TENANT, where, { content: 'x'.repeat(400) })).status).toBe('saved');
  });
});

describe('tenants and scopes', () => {
  it('keeps each tenant’s scopes apart, whatever their names', async () => {
    const memory = store();
    const where = scope();
    const mine = await saved(memory, where, 'acme secret sauce recipe');
    expect(await memory.recall('beta', where, '', 10)).toEqual([]);
    expect(await memory.recall('beta', where, 'recipe', 10)).toEqual([]);
    expect(await memory.recall(TENANT, scope(), 'recipe', 10)).toEqual([]);
    expect(await memory.delete('beta', where, mine.id)).toBe(false);
    expect(await memory.clear('beta', where)).toBe(0);
    // The same content is no duplicate in another tenant's scope.
    expect((await memory.save('beta', where, { content: 'acme secret sauce recipe' })).status).toBe('saved');
    expect(await memory.recall(TENANT, where, '', 10)).toEqual([mine]);
  });
});

describe('ranking', () => {
  it('puts the more relevant entries first, then the newer among equal scores', async () => {
    const memory = store();
    const where = scope();
    const relevant = await saved(
      memory,
      where,
      'The release checklist: bump the release version, tag the release.',
    );
    const olderTie = await saved(memory, where, 'Deploys use the blue green strategy');
    const newerTie = await saved(memory, where, 'Deploys use the canary rollout plan');
    await saved(memory, where, 'Unrelated: the user likes tea.');
    const release = await memory.recall(TENANT, where, 'release', 10);
    expect(release[0]).toEqual(relevant);
    const deploys = await memory.recall(TENANT, where, 'deploys', 10);
    expect(deploys.map((record) => record.id)).toEqual([newerTie.id, olderTie.id]);
    // A more relevant entry wins over a newer one.
    const plan = await memory.recall(TENANT, where, 'canary', 10);
    expect(plan.map((record) => record.id)).toEqual([newerTie.id]);
  });

  it('finds by tags, prefixes and small typos, and in Chinese text', async () => {
    const memory = store();
    const where = scope();
    const tagged = await saved(memory, where, 'Use four spaces.', ['indentation']);
    const long = await saved(memory, where, 'Configuration lives in packages/config.');
    const chinese = await saved(memory, where, '用户偏好中文回答，代码注释用英文。');
    expect((await memory.recall(TENANT, where, 'indentation', 5))[0]).toEqual(tagged);
    expect((await memory.recall(TENANT, where, 'config', 5))[0]).toEqual(long);
    expect((await memory.recall(TENANT, where, 'configuraton', 5))[0]).toEqual(long);
    expect((await memory.recall(TENANT, where, '中文', 5))[0]).toEqual(chinese);
    expect(await memory.recall(TENANT, where, 'zebra', 5)).toEqual([]);
  });

  it('lists the most recent first for an empty query, in pages, with the counts', async () => {
    const memory = store();
    const where = scope();
    const records = [];
    for (let i = 0; i < 5; i++) records.push(await saved(memory, where, `entry ${i} about builds`));
    // The scope's clock: every save later than the one before, even within a millisecond.
    for (let i = 1; i < records.length; i++) {
      expect(records[i]?.updatedAt).toBeGreaterThan(records[i - 1]?.updatedAt ?? Number.POSITIVE_INFINITY);
    }
    const newestFirst = records.reverse().map((record) => record.id);
    const page = await memory.list(TENANT, where, { limit: 2, offset: 2 });
    expect(page.records.map((record) => record.id)).toEqual(newestFirst.slice(2, 4));
    expect(page).toMatchObject({ matched: 5, total: 5 });
    const matching = await memory.list(TENANT, where, { query: 'entry 3', limit: 10 });
    expect(matching.records[0]?.id).toBe(newestFirst[1]);
    expect(matching.total).toBe(5);
  });
});

describe('the prompt’s recent entries', () => {
  /** What the prompt adds to an entry: `[<id>] <date>` and its tags, a line break, the blank line after. */
  const header = (record: { id: string; tags: string[] }) =>
    record.id.length + 16 + (record.tags.length > 0 ? record.tags.join(', ').length + 3 : 0);

  it('takes the newest entries that fit the budget, headers counted, cuts the one that crosses it, and counts the rest', async () => {
    const memory = store();
    const where = scope();
    const a = await saved(memory, where, 'a'.repeat(50));
    const b = await saved(memory, where, 'b'.repeat(50));
    const c = await saved(memory, where, 'c'.repeat(50), ['deploy']);
    const two = header(c) + 50 + header(b) + 50;
    const recent = await memory.recent(TENANT, where, two + header(a) + 20);
    expect(recent.records.map((record) => record.content)).toEqual([
      'c'.repeat(50),
      'b'.repeat(50),
      'a'.repeat(20),
    ]);
    expect(recent).toMatchObject({ cut: true, more: 0 });
    const fits = await memory.recent(TENANT, where, two);
    expect(fits.records.map((record) => record.content[0])).toEqual(['c', 'b']);
    expect(fits).toMatchObject({ cut: false, more: 1 });
    expect(await memory.recent(TENANT, scope(), 100)).toEqual({ records: [], cut: false, more: 0 });
  });

  it('stays within the budget however many tiny, heavily tagged entries the scope holds', async () => {
    const memory = store();
    const where = scope();
    const tags = Array.from({ length: 16 }, (_, i) => `${String(i).padStart(2, '0')}${'t'.repeat(62)}`);
    for (let i = 0; i < 40; i++) await saved(memory, where, `f${i}`, tags);
    const { records, more } = await memory.recent(TENANT, where, 2_000);
    const shown = records.reduce((sum, record) => sum + header(record) + record.content.length, 0);
    expect(shown).toBeLessThanOrEqual(2_000);
    expect(records.length).toBeGreaterThan(0);
    expect(records.length + more).toBe(40);
  });
});

describe('text Redis cannot read back', () => {
  it('stores a lone surrogate as U+FFFD, so the entry can still be replaced and deleted', async () => {
    const memory = store();
    const where = scope();
    const record = await saved(memory, where, 'likes \ud800 emoji', ['tag\udc00']);
    expect(record.content).toBe('likes \ufffd emoji');
    expect(record.tags).toEqual(['tag\ufffd']);
    const replaced = await memory.save(TENANT, where, { content: 'likes 😀 emoji', replaces: record.id });
    expect(replaced.status).toBe('saved');
    expect(await memory.delete(TENANT, where, record.id)).toBe(true);
  });
});

describe('copies of a scope in other processes', () => {
  it('see every save, replacement, delete and clear of another store at once', async () => {
    const writer = store();
    const reader = store();
    const where = scope();
    const a = await saved(writer, where, 'alpha fact');
    expect(await reader.recall(TENANT, where, 'alpha', 5)).toEqual([a]);
    // Entry by entry from the change log.
    const b = await saved(writer, where, 'beta fact');
    const replaced = await writer.save(TENANT, where, { content: 'alpha corrected', replaces: a.id });
    expect(replaced.status).toBe('saved');
    expect((await reader.recall(TENANT, where, 'alpha', 5)).map((record) => record.content)).toEqual([
      'alpha corrected',
    ]);
    await writer.delete(TENANT, where, b.id);
    expect(await reader.recall(TENANT, where, 'beta', 5)).toEqual([]);
    // A clear, then as many saves as before: the reader never mistakes the new state for its copy.
    await writer.clear(TENANT, where);
    const c = await saved(writer, where, 'gamma fact');
    expect(await reader.recall(TENANT, where, '', 5)).toEqual([c]);
  });

  it('take the scope as it is when its version went back (its keys deleted or restored)', async () => {
    const writer = store();
    const reader = store();
    const where = scope();
    for (const content of ['one', 'two', 'three']) await saved(writer, where, content);
    expect(await reader.recall(TENANT, where, '', 5)).toHaveLength(3);
    // The scope's keys are gone (a restore of an older copy would do the same), then one entry is written.
    const memoryKeys = keys.memory(TENANT, where);
    await redis.del(
      memoryKeys.entries,
      memoryKeys.order,
      memoryKeys.meta,
      memoryKeys.log,
      memoryKeys.digests,
    );
    const fresh = await saved(writer, where, 'after the restore');
    expect(await reader.recall(TENANT, where, '', 5)).toEqual([fresh]);
    expect((await reader.recent(TENANT, where, 2_000)).records).toEqual([fresh]);
  });

  it('load the whole scope again when they fall further behind than the change log reaches', async () => {
    const writer = store();
    const reader = store();
    const where = scope();
    const first = await saved(writer, where, 'first entry');
    expect(await reader.recall(TENANT, where, '', 5)).toEqual([first]);
    for (let i = 0; i < 300; i++) {
      const record = await saved(writer, where, `churn ${i}`);
      await writer.delete(TENANT, where, record.id);
    }
    const last = await saved(writer, where, 'last entry');
    expect((await reader.recall(TENANT, where, '', 5)).map((record) => record.id)).toEqual([
      last.id,
      first.id,
    ]);
  });
});
