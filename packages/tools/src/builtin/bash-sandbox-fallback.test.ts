import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { EffectiveSandbox } from '../sandbox.js';
import { createFixture, type Fixture, invoke } from '../testing/fixtures.js';

// The host's bwrap works, so the probe's answer is replaced here to reach the other branches.
const answer = vi.hoisted(() => ({ value: { unavailable: 'bwrap failed: no user namespaces' } as unknown }));
vi.mock('../sandbox.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../sandbox.js')>()),
  resolveSandbox: async () => answer.value as EffectiveSandbox,
}));

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
});

afterEach(async () => {
  await fx.cleanup();
});

describe('bash when bubblewrap does not work', () => {
  it('refuses to run in bwrap mode, saying why', async () => {
    answer.value = { unavailable: 'bwrap failed: no user namespaces' };
    const result = await invoke(fx.tool('bash', { sandbox: 'bwrap' }), { command: 'touch ran' });
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_SANDBOX_UNAVAILABLE' });
    expect(result.content).toContain('no user namespaces');
    expect(fx.events).toEqual([]);
  });

  it('runs without the sandbox in auto mode, with a warning naming the reason', async () => {
    answer.value = { mode: 'none', fallbackReason: 'bwrap failed: no user namespaces' };
    const result = await invoke(fx.tool('bash', { sandbox: 'auto' }), { command: 'echo ran' });
    expect(result).toEqual({ ok: true, content: 'Exit code: 0\nOutput:\nran\n' });
    expect(fx.warnings).toEqual([
      {
        obj: { runId: 'run-test', requested: 'auto', reason: 'bwrap failed: no user namespaces' },
        msg: 'bash runs without a sandbox: commands can read and write anything the worker can, and use the network',
      },
    ]);
  });
});
