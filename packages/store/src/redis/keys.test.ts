import { newChildRunId, newId, newSessionRunId, RUN_ID_PATTERN } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { createKeys } from './keys.js';
import { keySlot } from './slot-pipelines.js';

describe('queue shards', () => {
  it('keeps the one queue under the prefix itself, and gives each of several a hash tag of its own', () => {
    expect(createKeys('{tether}').shardPrefix(0)).toBe('{tether}');
    const keys = createKeys('{tether}', 3);
    expect([0, 1, 2].map((shard) => keys.shardPrefix(shard))).toEqual([
      '{tether:0}',
      '{tether:1}',
      '{tether:2}',
    ]);
    expect(() => keys.shardPrefix(3)).toThrow(/no queue shard 3/);
    expect(() => createKeys('{tether}', 0)).toThrow(RangeError);
    expect(() => createKeys('{tether}', 65)).toThrow(RangeError);
  });

  it('chooses a run’s shard by a stable hash of its id, spread evenly', () => {
    const keys = createKeys('{tether}', 3);
    // Stable across processes and versions: a run's shard never moves.
    expect(keys.shardOf('run_01m8npxnfgzwg0xxz4ea5cwhnq')).toBe(
      keys.shardOf('run_01m8npxnfgzwg0xxz4ea5cwhnq'),
    );
    expect(createKeys('{tether}', 1).shardOf('run_anything')).toBe(0);
    const counts = [0, 0, 0];
    for (let i = 0; i < 30_000; i++) {
      const id = `run_01m8np${i.toString(36).padStart(20, '0')}`;
      counts[keys.shardOf(id)] = (counts[keys.shardOf(id)] ?? 0) + 1;
    }
    for (const count of counts) expect(Math.abs(count - 10_000)).toBeLessThan(500);
  });
});

describe('session keys', () => {
  it('puts a session’s runs in the session’s hash slot, and any other run in its own', () => {
    const keys = createKeys('{tether}');
    const sessionId = newId('ses');
    const session = keys.session(sessionId);
    const runId = newSessionRunId(sessionId);
    expect(runId).toMatch(new RegExp(RUN_ID_PATTERN));
    const tag = (key: string) => /\{([^}]*)\}/.exec(key)?.[1];
    expect(tag(session.record)).toBe(`s_${sessionId.slice(-16)}`);
    for (const key of [session.runs, session.queue, session.transcript, session.files]) {
      expect(tag(key)).toBe(tag(session.record));
    }
    const run = keys.run(runId);
    for (const key of [run.record, run.events, run.checkpoint, run.turn, run.waitpoint]) {
      expect(tag(key)).toBe(tag(session.record));
    }
    expect(run.session).toEqual(session);
    // A run of no session: its own tag, and session keys that are its own (never written).
    const alone = keys.run(newId('run'));
    expect(tag(alone.session.record)).toBe(tag(alone.record));
    expect(tag(alone.turn)).toBe(tag(alone.record));
  });

  it("puts a crew tree in its root's hash slot: children, grandchildren, and a session's tree in the session's", () => {
    const keys = createKeys();
    const tag = (key: string) => /\{([^}]*)\}/.exec(key)?.[1];
    const root = newId('run');
    const child = newChildRunId(root);
    const grandchild = newChildRunId(child);
    for (const id of [child, grandchild]) {
      expect(id).toMatch(new RegExp(RUN_ID_PATTERN));
      expect(id.endsWith(root.slice(4))).toBe(true);
      const run = keys.run(id);
      for (const key of [run.record, run.events, run.checkpoint, run.waitpoint, run.children, run.unused]) {
        expect(tag(key)).toBe(root);
      }
      // Its keys are its own, not its root's.
      expect(run.record).not.toBe(keys.run(root).record);
    }
    expect(keys.run(child).record).not.toBe(keys.run(grandchild).record);
    // Under a session's run, the tree keeps the session's tag.
    const sessionId = newId('ses');
    const sessionRun = newSessionRunId(sessionId);
    const sessionChild = newChildRunId(sessionRun);
    expect(sessionChild).toMatch(new RegExp(RUN_ID_PATTERN));
    expect(tag(keys.run(sessionChild).record)).toBe(`s_${sessionId.slice(-16)}`);
    expect(tag(keys.run(newChildRunId(sessionChild)).record)).toBe(`s_${sessionId.slice(-16)}`);
  });
});

describe('tenant slot keys', () => {
  it("are three keys under the tenant's hash tag, the tag of its runs' index", () => {
    const keys = createKeys('{tether}');
    const slots = keys.tenantSlots('acme');
    const tag = (key: string) => /\{([^}]*)\}/.exec(key)?.[1];
    expect(new Set(Object.values(slots)).size).toBe(3);
    for (const key of Object.values(slots)) expect(tag(key)).toBe('acme');
    expect(tag(keys.tenantRuns('acme'))).toBe('acme');
    expect(slots.running).toBe('tether:tenant:{acme}:running');
  });
});

describe('memory keys', () => {
  it('puts every key of a scope in one hash slot, tagged by tenant and scope', () => {
    const keys = createKeys('{tether}');
    const scope = keys.memory('acme', 'user-42');
    expect(scope.entries).toBe('tether:mem:{m_acme:user-42}:entries');
    const slots = new Set(Object.values(scope).map((key) => keySlot(key)));
    expect(slots.size).toBe(1);
    // Another tenant's scope of the same name, and another scope, are other keys.
    expect(keys.memory('beta', 'user-42').entries).not.toBe(scope.entries);
    expect(keys.memory('acme', 'user-43').entries).not.toBe(scope.entries);
  });
});
