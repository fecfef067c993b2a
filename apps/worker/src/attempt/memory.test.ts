import { newChildRunId, newId, newSessionRunId } from '@tether/protocol';
import { MemoryStore } from '@tether/store/memory';
import { createKeys } from '@tether/store/redis';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../config.js';
import { planChildren } from './crew.js';
import { memoryScopeFor } from './memory.js';
import { memoryAccess } from './memory-access.js';

/** A store that is never asked anything (no Redis): the scope rules are decided before any call. */
const memory = new MemoryStore({ redis: {} as Redis, keys: createKeys() });
const config = loadWorkerConfig({});

describe('the memory scope of a run', () => {
  it("is the body's scope, else the session's id, else default, for a run with a memory tool", () => {
    const tools = ['bash', 'memory_recall'];
    expect(memoryScopeFor({ memory }, { input: 'x', memory: { scope: 'user-42' } }, 'ses_x', tools)).toBe(
      'user-42',
    );
    expect(memoryScopeFor({ memory }, { input: 'x' }, 'ses_x', tools)).toBe('ses_x');
    expect(memoryScopeFor({ memory }, { input: 'x' }, undefined, ['memory_save'])).toBe('default');
  });

  it('is none without a memory tool, or in a worker without memory', () => {
    expect(
      memoryScopeFor({ memory }, { input: 'x', memory: { scope: 'a' } }, undefined, ['bash']),
    ).toBeUndefined();
    expect(memoryScopeFor({}, { input: 'x' }, undefined, ['memory_save'])).toBeUndefined();
    expect(memoryAccess({ memory }, { tenant: 't', memoryScope: undefined })).toBeUndefined();
    expect(memoryAccess({}, { tenant: 't', memoryScope: 'a' })).toBeUndefined();
    expect(memoryAccess({ memory }, { tenant: 't', memoryScope: 'a' })?.scope).toBe('a');
  });

  it("is inherited by crew children: the parent's own scope, resolved, goes into each child's body", () => {
    const delegation = (parent: string) => ({
      callId: 'call_1',
      name: 'delegate_task' as const,
      tasks: [{ goal: 'g', childRunId: newChildRunId(parent) }],
    });
    const plan = (runId: string, spec: { input: string; memory?: { scope: string } }, sessionId?: string) =>
      planChildren({ runId, config }, { tenant: 't', spec, sessionId }, delegation(runId), () => '{tether}');
    const named = plan(newId('run'), { input: 'x', memory: { scope: 'user-42' } });
    expect(named[0]?.spec.memory).toEqual({ scope: 'user-42' });
    const sessionId = newId('ses');
    const inSession = plan(newSessionRunId(sessionId), { input: 'x' }, sessionId);
    expect(inSession[0]?.spec.memory).toEqual({ scope: sessionId });
    expect(plan(newId('run'), { input: 'x' })[0]?.spec.memory).toEqual({ scope: 'default' });
  });
});
