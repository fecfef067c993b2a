/**
 * A read-only bind under bwrap (the tenant's skills at /run/skills): its
 * scripts run, nothing in it can be changed (as root inside too), and the
 * host directory that holds it (other tenants' copies) shows nothing. CI
 * runs as root; there a sandbox that does not work fails these tests.
 */
import { spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildBwrapArgs, probeBwrap } from '../sandbox.js';
import { createFixture, type Fixture, invoke } from '../testing/fixtures.js';

const probe = await probeBwrap();
const unavailable = probe.ok ? '' : `bubblewrap does not work on this host (${probe.detail})`;
if (unavailable !== '' && process.env.CI === 'true') throw new Error(`Must run in CI: ${unavailable}`);

let fx: Fixture;
let cache: string;
let mine: string;

beforeEach(async () => {
  fx = await createFixture();
  // Outside /tmp, where the private /tmp would hide it anyway: the hide must do it.
  cache = await mkdtemp('/var/tmp/tether-skills-cache-');
  await chmod(cache, 0o711);
  mine = path.join(cache, 'acme', 'v1');
  const other = path.join(cache, 'beta', 'v1', 'secret');
  await mkdir(path.join(mine, 'hello', 'scripts'), { recursive: true });
  await mkdir(other, { recursive: true });
  await writeFile(path.join(mine, 'hello', 'SKILL.md'), '---\nname: hello\n---\nSay hi.\n', { mode: 0o444 });
  await writeFile(path.join(mine, 'hello', 'scripts', 'hi.sh'), '#!/bin/sh\necho "hi from $1"\n', {
    mode: 0o555,
  });
  await writeFile(path.join(other, 'SKILL.md'), 'beta-secret', { mode: 0o444 });
  for (const dir of [
    path.join(cache, 'acme'),
    mine,
    path.join(mine, 'hello'),
    path.join(mine, 'hello', 'scripts'),
  ]) {
    await chmod(dir, 0o555);
  }
});

afterEach(async () => {
  await fx.cleanup();
  await chmod(mine, 0o755).catch(() => undefined);
  await rm(cache, { recursive: true, force: true });
});

const bash = () =>
  fx.tool('bash', {
    sandbox: 'bwrap',
    readOnlyBinds: [{ source: mine, target: '/run/skills', hide: cache }],
  });

describe.skipIf(unavailable !== '')('a read-only bind under bwrap', () => {
  it('runs a script from it, in every command of the run (the prepared sandbox too)', async () => {
    const tool = bash();
    for (const who of ['one', 'two', 'three']) {
      const result = await invoke(tool, {
        command: `/run/skills/hello/scripts/hi.sh ${who} && ls /run/skills`,
      });
      expect(result.ok, result.content).toBe(true);
      expect(result.content).toContain(`hi from ${who}`);
      expect(result.content).toMatch(/^hello$/m);
    }
  });

  it('cannot be changed, by the sandbox user or by root inside it', async () => {
    const tool = bash();
    const attempts = [
      'touch /run/skills/hello/new',
      'echo x > /run/skills/hello/SKILL.md',
      'rm -f /run/skills/hello/SKILL.md',
      'chmod 777 /run/skills/hello/scripts/hi.sh',
      'mkdir /run/skills/more',
      'mount -o remount,rw /run/skills',
      'umount /run/skills',
    ];
    for (const command of attempts) {
      const result = await invoke(tool, { command: `${command} 2>&1; echo "exit=$?"` });
      expect(result.content, command).not.toMatch(/exit=0$/m);
    }
    const unchanged = await invoke(tool, { command: 'cat /run/skills/hello/SKILL.md; ls /run/skills/hello' });
    expect(unchanged.content).toContain('Say hi.');
    expect(unchanged.content).not.toContain('new');
  });

  // uid 0 inside needs a user namespace of the sandbox's own (where the kernel allows one).
  it.skipIf(!probe.userNamespace)(
    'cannot be changed by uid 0 inside the sandbox either (the bwrap arguments bash uses)',
    () => {
      const args = buildBwrapArgs({
        workspace: fx.workspace,
        allowNetwork: false,
        tmpBytes: 1 << 20,
        userNamespace: probe.userNamespace,
        readOnlyBinds: [{ source: mine, target: '/run/skills', hide: cache }],
      });
      const script = [
        'id -u',
        'touch /run/skills/hello/new 2>&1 || echo refused-touch',
        'mount -o remount,rw /run/skills 2>&1 || echo refused-mount',
        'cat /run/skills/hello/SKILL.md',
      ].join('\n');
      const run = spawnSync(
        probe.path as string,
        [...args, '--uid', '0', '--gid', '0', '--', 'sh', '-c', script],
        {
          encoding: 'utf8',
        },
      );
      expect(run.stdout.split('\n')[0], run.stderr).toBe('0');
      expect(run.stdout).toContain('refused-touch');
      expect(run.stdout).toContain('refused-mount');
      expect(run.stdout).toContain('Say hi.');
    },
  );

  it("shows nothing of the directory that holds it: no other tenant's copy", async () => {
    const result = await invoke(bash(), {
      command: `ls -A ${cache} | wc -l; cat ${cache}/beta/v1/secret/SKILL.md 2>&1; ls /run/skills`,
    });
    expect(result.content).not.toContain('beta-secret');
    expect(result.content).toMatch(/^0$/m);
    expect(result.content).not.toMatch(/^secret$/m);
  });
});

describe('readOnlyBinds in the run context', () => {
  it('refuses a target outside /run, a relative source, and a hide that does not hold the source', () => {
    expect(() => fx.tool('bash', { readOnlyBinds: [{ source: mine, target: '/skills' }] })).toThrow(
      'readOnlyBinds[0].target must be an absolute path under /run (got "/skills")',
    );
    expect(() => fx.tool('bash', { readOnlyBinds: [{ source: mine, target: '/run' }] })).toThrow(
      'under /run',
    );
    expect(() => fx.tool('bash', { readOnlyBinds: [{ source: 'rel', target: '/run/skills' }] })).toThrow(
      'readOnlyBinds[0].source must be an absolute path',
    );
    expect(() =>
      fx.tool('bash', { readOnlyBinds: [{ source: mine, target: '/run/skills', hide: '/srv/elsewhere' }] }),
    ).toThrow('readOnlyBinds[0].hide must be an absolute directory that holds the source');
  });
});
