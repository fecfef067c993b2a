import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROCESS_TAG_VARIABLE } from './process-tree.js';
import {
  buildBwrapArgs,
  buildCommandEnv,
  resolveSandbox,
  SANDBOX_PATH,
  ulimitValues,
  unsearchableAncestor,
} from './sandbox.js';

describe('buildBwrapArgs', () => {
  it('isolates everything and mounts the workspace last, over the private /tmp', () => {
    const args = buildBwrapArgs({ workspace: '/tmp/ws', allowNetwork: false, tmpBytes: 1024 });
    for (const flag of [
      '--unshare-user',
      '--disable-userns',
      '--die-with-parent',
      '--new-session',
      '--unshare-pid',
      '--unshare-net',
      '--unshare-ipc',
    ]) {
      expect(args).toContain(flag);
    }
    const joined = args.join(' ');
    expect(joined).toContain('--cap-drop ALL');
    expect(joined).toContain('--ro-bind / / --dev /dev --proc /proc');
    expect(joined).toContain('--size 1024 --tmpfs /tmp --tmpfs /run --remount-ro /run');
    expect(joined.endsWith('--bind /tmp/ws /tmp/ws --remount-ro /dev --chdir /tmp/ws')).toBe(true);
    expect(joined.indexOf('--tmpfs /tmp')).toBeLessThan(joined.indexOf('--bind /tmp/ws'));
  });

  it('covers the workspace root with an empty tmpfs before binding the workspace back', () => {
    const joined = buildBwrapArgs({
      workspace: '/srv/ws/run_1',
      workspaceRoot: '/srv/ws',
      allowNetwork: false,
      tmpBytes: 1,
    }).join(' ');
    expect(joined).toContain('--tmpfs /srv/ws --bind /srv/ws/run_1 /srv/ws/run_1 --remount-ro /srv/ws');
    // A root that does not contain the workspace is not covered.
    expect(
      buildBwrapArgs({ workspace: '/a/ws', workspaceRoot: '/b', allowNetwork: false, tmpBytes: 1 }),
    ).not.toContain('/b');
  });

  it('binds read-only directories under /run before it is made read-only, and hides what holds them', () => {
    const joined = buildBwrapArgs({
      workspace: '/srv/ws/run_1',
      workspaceRoot: '/srv/ws',
      allowNetwork: false,
      tmpBytes: 1,
      readOnlyBinds: [
        { source: '/var/cache/skills/acme/v3', target: '/run/skills', hide: '/var/cache/skills' },
      ],
    }).join(' ');
    expect(joined).toContain(
      '--tmpfs /run --ro-bind /var/cache/skills/acme/v3 /run/skills --remount-ro /run --tmpfs /var/cache/skills --remount-ro /var/cache/skills --tmpfs /srv/ws',
    );
  });

  it('keeps the network namespace only when the network is allowed', () => {
    expect(buildBwrapArgs({ workspace: '/w', allowNetwork: true, tmpBytes: 1 })).not.toContain(
      '--unshare-net',
    );
  });
});

describe('buildCommandEnv', () => {
  it('is the allow-list, the run env and the tag, nothing from process.env', () => {
    process.env.TETHER_SANDBOX_TEST_LEAK = 'leak';
    try {
      expect(buildCommandEnv('/w', { EXTRA: '1' }, 'tag')).toEqual({
        PATH: SANDBOX_PATH,
        HOME: '/w',
        LANG: 'C.UTF-8',
        TERM: 'dumb',
        NO_COLOR: '1',
        TMPDIR: '/tmp',
        EXTRA: '1',
        [PROCESS_TAG_VARIABLE]: 'tag',
      });
    } finally {
      delete process.env.TETHER_SANDBOX_TEST_LEAK;
    }
  });

  it('does not let the run env replace the tag', () => {
    expect(buildCommandEnv('/w', { [PROCESS_TAG_VARIABLE]: 'mine' }, 'tag')[PROCESS_TAG_VARIABLE]).toBe(
      'tag',
    );
  });
});

describe('ulimitValues', () => {
  it('gives the file size in 512-byte blocks (rounded down), CPU seconds and open files', () => {
    expect(ulimitValues({ fileSizeBytes: 4096, cpuSeconds: 20, openFiles: 30 })).toEqual(['8', '20', '30']);
    expect(ulimitValues({ fileSizeBytes: 1500, cpuSeconds: 1, openFiles: 16 })).toEqual(['2', '1', '16']);
  });
});

describe('resolveSandbox', () => {
  const failing = async () => ({
    ok: false,
    path: undefined,
    detail: 'bwrap is not installed',
    userNamespace: false,
    uid: undefined,
  });
  const working = async () => ({
    ok: true,
    path: '/usr/bin/bwrap',
    detail: 'ok',
    userNamespace: true,
    uid: 65534,
  });
  const never = async (): Promise<never> => {
    throw new Error('none must not probe');
  };

  it('takes none as is, without probing', async () => {
    expect(await resolveSandbox('none', never)).toEqual({ mode: 'none' });
  });

  it('requires a working bwrap for bwrap', async () => {
    expect(await resolveSandbox('bwrap', working)).toEqual({ mode: 'bwrap', userNamespace: true });
    expect(await resolveSandbox('bwrap', failing)).toEqual({ unavailable: 'bwrap is not installed' });
  });

  it('falls back to none with the reason for auto', async () => {
    expect(await resolveSandbox('auto', working)).toEqual({ mode: 'bwrap', userNamespace: true });
    expect(await resolveSandbox('auto', failing)).toEqual({
      mode: 'none',
      fallbackReason: 'bwrap is not installed',
    });
  });
});

describe('unsearchableAncestor', () => {
  const user = { uid: 65534, gid: 65534 };

  it.skipIf(process.getuid?.() !== 0)(
    'finds the first directory the user cannot search, and the chmod of the bit that counts for it',
    async () => {
      const base = await mkdtemp(join(tmpdir(), 'tether-search-'));
      try {
        await chmod(base, 0o755);
        const dir = join(base, 'private');
        const root = join(dir, 'deeper', 'workspaces');
        await mkdir(join(dir, 'deeper'), { recursive: true });
        // Root's, 0700: others' bit.
        await chmod(dir, 0o700);
        expect(await unsearchableAncestor(root, user)).toEqual({ path: dir, fix: `chmod o+x ${dir}` });
        // Its group is the user's: the group's bit counts, o+x would not help.
        await chown(dir, 0, user.gid);
        await chmod(dir, 0o701);
        expect(await unsearchableAncestor(root, user)).toEqual({ path: dir, fix: `chmod g+x ${dir}` });
        // Its owner is the user: the owner's bit.
        await chown(dir, user.uid, 0);
        await chmod(dir, 0o011);
        expect(await unsearchableAncestor(root, user)).toEqual({ path: dir, fix: `chmod u+x ${dir}` });
        // Reachable; and what is not made yet is made searchable by the worker.
        await chmod(dir, 0o711);
        expect(await unsearchableAncestor(root, user)).toBeUndefined();
        // The worker's own user (not root): nothing to check.
        await chmod(dir, 0o700);
        expect(await unsearchableAncestor(root, undefined)).toBeUndefined();
      } finally {
        await rm(base, { recursive: true, force: true });
      }
    },
  );
});
