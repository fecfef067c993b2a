/**
 * The escape corpus: what an attacker who controls the model's `bash` calls
 * tries, each refused under `TETHER_SANDBOX=bwrap`. CI runs as root, so the
 * root case is checked on every landing; under CI a sandbox that does not
 * work fails these tests instead of skipping them.
 *
 * The last block lists what `none` mode exposes, as docs/tools.md says.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cgroupSupport } from '../cgroup.js';
import { probeBwrap, SANDBOX_PATH } from '../sandbox.js';
import { createFixture, type Fixture, invoke } from '../testing/fixtures.js';
import type { RunContext, ToolResult } from '../types.js';

const probe = await probeBwrap();
const unavailable = probe.ok ? '' : `bubblewrap does not work on this host (${probe.detail})`;
if (unavailable !== '' && process.env.CI === 'true') {
  throw new Error(`The escape corpus must run in CI: ${unavailable}`);
}
const isRoot = process.getuid?.() === 0;
const cgroups = await cgroupSupport();
if (cgroups.kind === 'none' && isRoot && process.env.CI === 'true') {
  throw new Error(`CI runs as root on a host with cgroups: ${cgroups.reason}`);
}

let fx: Fixture;
/** A workspace root outside /tmp (where the deployments keep theirs), with two runs' workspaces in it. */
let root: string;
let mine: string;
let other: string;
let hostDir: string;
const secret = `secret-${randomBytes(6).toString('hex')}`;

beforeEach(async () => {
  fx = await createFixture();
  root = await mkdtemp('/var/tmp/tether-escape-');
  await chmod(root, 0o755);
  mine = path.join(root, 'run_mine');
  other = path.join(root, 'run_other');
  await mkdir(mine);
  await mkdir(other);
  await writeFile(path.join(other, 'notes.txt'), secret);
  hostDir = await mkdtemp('/var/tmp/tether-host-');
  await chmod(hostDir, 0o777);
});

afterEach(async () => {
  await fx.cleanup();
  await rm(root, { recursive: true, force: true });
  await rm(hostDir, { recursive: true, force: true });
});

function bash(overrides: Partial<RunContext> = {}) {
  return fx.tool('bash', { sandbox: 'bwrap', workspace: mine, workspaceRoot: root, ...overrides });
}

/**
 * How the corpus's commands start: in a sandbox started for the command (a run's first command), or
 * in the sandbox prepared after an earlier command of the run, which waited for it.
 */
let preparedMode = false;

async function run(command: string, overrides: Partial<RunContext> = {}): Promise<ToolResult> {
  const finished: { prepared?: boolean }[] = [];
  const tool = bash({
    logger: {
      warn: () => undefined,
      info: () => undefined,
      debug: (obj, msg) => {
        if (msg === 'bash finished') finished.push(obj);
      },
    },
    ...overrides,
  });
  if (preparedMode) await invoke(tool, { command: 'true' });
  const result = await invoke(tool, { command, timeout: 20 });
  expect(finished.at(-1)?.prepared).toBe(preparedMode);
  return result;
}

/** The command's output (after "Output:\n"). */
function output(result: ToolResult): string {
  const at = result.content.indexOf('Output:\n');
  return at === -1 ? '' : result.content.slice(at + 'Output:\n'.length);
}

const test = it.skipIf(unavailable !== '');

/** A process of the worker's user holding the secret in its environment (as the API key is in the worker's). */
async function holdSecret(): Promise<ChildProcess> {
  const holder = spawn('sleep', ['60'], {
    env: { PATH: SANDBOX_PATH, HOLDER_SECRET: secret },
    stdio: 'ignore',
  });
  await new Promise<void>((resolve) => holder.once('spawn', resolve));
  return holder;
}

describe.each([
  { prepared: false, start: 'started for the command' },
  { prepared: true, start: 'prepared after an earlier command' },
])('escape corpus (bwrap), in a sandbox $start', ({ prepared }) => {
  beforeEach(() => {
    preparedMode = prepared;
  });

  test('no capability is left: effective, permitted and bounding sets are empty', async () => {
    const result = await run(
      'grep -E "^Cap(Eff|Prm|Bnd|Amb):" /proc/self/status; grep NoNewPrivs /proc/self/status',
    );
    expect(result.ok).toBe(true);
    for (const cap of ['CapEff', 'CapPrm', 'CapBnd', 'CapAmb']) {
      expect(output(result)).toMatch(new RegExp(`^${cap}:\\s+0+$`, 'm'));
    }
  });

  test('runs as an unprivileged user in a user namespace of its own', async () => {
    const result = await run('id -u; cat /proc/self/uid_map');
    const [uid, ...map] = output(result).trim().split('\n');
    expect(Number(uid)).not.toBe(0);
    if (probe.userNamespace) expect(map.join(' ').trim()).not.toMatch(/^0\s+0\s+4294967295$/);
    if (isRoot) expect(Number(uid)).toBe(65534);
  });

  test('remounting the root read-write fails, and nothing reaches the host', async () => {
    const marker = path.join(hostDir, 'remounted');
    const result = await run(
      `mount -o remount,bind,rw / ; mount -o remount,rw / ; touch ${marker}; echo done`,
    );
    expect(output(result)).toMatch(/must be superuser|Permission denied|Operation not permitted/);
    await expect(stat(marker)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  test('umount of /tmp, /run and /proc fails: the host /tmp, /run and processes stay hidden', async () => {
    const result = await run(
      'umount /tmp; echo "tmp=$?"; umount /run; echo "run=$?"; umount -l /proc; echo "proc=$?"; ls /proc | grep -c "^[0-9]"',
    );
    const text = output(result);
    expect(text).toMatch(/tmp=[1-9]/);
    expect(text).toMatch(/run=[1-9]/);
    expect(text).toMatch(/proc=[1-9]/);
    // Only the sandbox's own few processes are visible.
    expect(Number(text.trim().split('\n').at(-1))).toBeLessThan(10);
  });

  test("the worker's environment cannot be read through /proc", async () => {
    const holder = await holdSecret();
    try {
      const result = await run(`cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c ${secret}`);
      expect(output(result).trim()).toBe('0');
    } finally {
      holder.kill('SIGKILL');
    }
  });

  test("another run's workspace is neither listed nor readable", async () => {
    const result = await run(
      `ls -A .. | tr '\\n' ' '; echo; cat ../run_other/notes.txt; cat ${other}/notes.txt; echo end`,
    );
    expect(output(result)).not.toContain(secret);
    expect(output(result).split('\n')[0]?.trim()).toBe('run_mine');
  });

  test('the workspace and a size-capped /tmp are the only writable places', async () => {
    const result = await run(
      [
        `touch ${hostDir}/x 2>/dev/null && echo "wrote host"`,
        'touch /var/tmp/x /etc/x /run/x /dev/x /dev/shm/x /usr/x 2>/dev/null && echo "wrote system"',
        `touch ${root}/x 2>/dev/null && echo "wrote root"`,
        'head -c 2000000 /dev/zero > /tmp/big 2>/dev/null || echo "tmp full"',
        'touch here && echo "wrote workspace"',
      ].join('; '),
      { limits: { bashTmpBytes: 1024 * 1024 } },
    );
    const text = output(result);
    expect(text).not.toContain('wrote host');
    expect(text).not.toContain('wrote system');
    expect(text).not.toContain('wrote root');
    expect(text).toContain('tmp full');
    expect(text).toContain('wrote workspace');
    expect(await readFile(path.join(mine, 'here'), 'utf8')).toBe('');
  });

  test('host unix sockets are unreachable: under /run, elsewhere on disk, and abstract', async () => {
    const servers: Server[] = [];
    let connections = 0;
    const listen = (where: string) =>
      new Promise<void>((resolve) => {
        const server = createServer((socket) => {
          connections++;
          socket.destroy();
        });
        servers.push(server);
        server.listen(where, resolve);
      });
    const onDisk = path.join(await mkdtemp('/var/tmp/tether-sock-'), 's.sock');
    const abstract = `\0tether-escape-${randomBytes(4).toString('hex')}`;
    await listen(onDisk);
    await listen(abstract);
    try {
      const script = (target: string) =>
        `node -e 'const s=require("net").connect(${JSON.stringify(target)});s.on("connect",()=>{console.log("connected");s.end()});s.on("error",e=>console.log(e.code))'`;
      const result = await run(`${script(onDisk)}; ${script(abstract)}; ls -A /run | wc -l`);
      expect(output(result)).not.toContain('connected');
      expect(connections).toBe(0);
    } finally {
      for (const server of servers) server.close();
      await rm(path.dirname(onDisk), { recursive: true, force: true });
    }
  });

  test('unshare cannot make new namespaces (user, mount, network)', async () => {
    const result = await run(
      'for ns in -U -m -n -r; do unshare $ns true && echo "unshared $ns"; done; echo end',
    );
    expect(output(result)).not.toContain('unshared');
  });

  test('ptrace cannot attach to the worker (it is not even visible)', async () => {
    const result = await run(
      `perl -e 'require "syscall.ph"; my $r = syscall(&SYS_ptrace, 16, ${process.pid}, 0, 0); print $r == 0 ? "attached\\n" : "refused: $!\\n"'`,
    );
    expect(output(result)).toMatch(/^refused: /);
  });

  test("keyctl cannot reach root's persistent keyring", async () => {
    const result = await run(
      `perl -e 'require "syscall.ph"; my $r = syscall(&SYS_keyctl, 22, 0, -2); print $r >= 0 ? "got keyring\\n" : "refused: $!\\n"'`,
    );
    expect(output(result)).toMatch(/^refused: /);
  });

  test('/sys and the cgroup tree cannot be written', async () => {
    const result = await run(
      'for f in /sys/kernel/mm/ksm/run /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/pids/cgroup.procs /proc/sys/kernel/hostname; do echo 1 > "$f" 2>/dev/null && echo "wrote $f"; done; echo end',
    );
    expect(output(result)).not.toContain('wrote');
  });

  test('raw and packet sockets cannot be opened', async () => {
    const result = await run(
      `perl -MSocket -e 'for my $t ([PF_INET, SOCK_RAW, 1], [17, SOCK_RAW, 0x300]) { socket(my $s, $t->[0], $t->[1], $t->[2]) ? print "opened\\n" : print "refused: $!\\n" }'`,
    );
    expect(output(result)).not.toContain('opened');
    expect(output(result).match(/refused/g)).toHaveLength(2);
  });

  test('chroot fails', async () => {
    const result = await run('chroot / true && echo chrooted; echo end');
    expect(output(result)).not.toContain('chrooted');
  });

  test('setuid binaries give no privilege back', async () => {
    const result = await run(
      [
        'su -c "id -u" root </dev/null 2>/dev/null && echo "su worked"',
        'mount -t tmpfs none /var/tmp 2>/dev/null && echo "mounted"',
        `perl -e '$< = 0; $> = 0; print(($< == 0 || $> == 0) ? "became root\\n" : "still unprivileged\\n")'`,
        'grep -E "^NoNewPrivs" /proc/self/status',
      ].join('; '),
    );
    const text = output(result);
    expect(text).not.toContain('su worked');
    expect(text).not.toContain('mounted');
    if (isRoot || probe.uid !== 0) expect(text).toContain('still unprivileged');
  });

  test('/dev holds only the harmless devices, and no device can be made', async () => {
    const result = await run(
      'ls /dev; mknod /tmp/disk b 8 0 && echo "made device"; ls /dev/vda /dev/sda /dev/mem /dev/kmsg 2>&1 | grep -v "No such" ; echo end',
    );
    const text = output(result);
    expect(text).not.toContain('made device');
    expect(text).toContain('null');
    for (const device of ['vda', 'sda', 'mem', 'kmsg'])
      expect(text).not.toMatch(new RegExp(`^/dev/${device}$`, 'm'));
  });

  test('a hard link to a host file cannot be made in the workspace', async () => {
    const target = path.join(hostDir, 'host-file');
    await writeFile(target, 'host');
    await chmod(target, 0o666);
    const result = await run(
      `ln ${target} linked && echo linked; ln /etc/hostname h2 && echo linked; echo end`,
    );
    expect(output(result)).not.toContain('linked\n');
    await expect(stat(path.join(mine, 'linked'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  test('a symlink swapped in between check and use never lets the file tools read or write outside', async () => {
    const target = path.join(hostDir, 'target.txt');
    await writeFile(target, secret);
    await chmod(target, 0o666);
    await writeFile(path.join(mine, 'a'), 'inside');
    const context = { sandbox: 'bwrap' as const, workspace: mine, workspaceRoot: root };
    const reader = fx.tool('read_file', context);
    const writer = fx.tool('write_file', context);
    // A command swaps `a` between a file and a symlink to the host file as fast as it can.
    const swapping = invoke(bash(), {
      command: `end=$((SECONDS+3)); while [ $SECONDS -lt $end ]; do ln -sfn ${target} a.tmp && mv -fT a.tmp a; echo inside > a.f && mv -fT a.f a; done; echo swapped`,
      timeout: 10,
    });
    const reads: ToolResult[] = [];
    const deadline = Date.now() + 2500;
    while (Date.now() < deadline) {
      reads.push(await invoke(reader, { path: 'a' }));
      reads.push(await invoke(writer, { path: 'a', content: 'written' }));
    }
    await swapping;
    expect(reads.length).toBeGreaterThan(10);
    for (const result of reads) expect(result.content).not.toContain(secret);
    expect(await readFile(target, 'utf8')).toBe(secret);
  });

  test('a fork bomb stops at the process limit, and the result says so', async () => {
    // The shell waits for the bomb by becoming `sleep` (exec: no fork). A `sleep 1` it forked raced the
    // bomb for the last free process: when it lost, bash retried the fork after 1, 2, 4 s, and the
    // test ran past its 5 s now and then.
    const result = await run(':(){ :|:& };: ; exec sleep 1', {
      limits: { bashMaxProcesses: 64 },
    });
    if (cgroups.kind !== 'none') {
      expect(result.content).toContain('[Process limit: the command reached 64 processes');
    } else {
      // No cgroup on this host: prlimit alone does not hold a fork bomb; the kill at the end still ends it.
      expect(result.content).not.toContain('[Process limit');
    }
    // Nothing of it is left running on the host.
    const left = execFileSync('sh', ['-c', 'ps -eo comm | grep -c "^bash$" || true'], { encoding: 'utf8' });
    expect(Number(left)).toBeLessThan(50);
  });

  test('memory past the limit is killed, /tmp included, and the result says which limit', async () => {
    const result = await run('head -c 200000000 /dev/zero > /tmp/fill; echo written', {
      limits: { bashMemoryBytes: 64 * 1024 * 1024, bashTmpBytes: 256 * 1024 * 1024 },
    });
    if (cgroups.kind !== 'none') {
      expect(output(result)).not.toContain('written');
      expect(result.content).toContain(
        '[Memory limit: a process was killed by the kernel for using more than 64 MiB',
      );
    } else {
      expect(result.content).not.toContain('[Memory limit');
    }
  });
});

describe('none mode: the documented exposures', () => {
  it("reads other runs' workspaces, and other processes' environments of the same user", async () => {
    const holder = await holdSecret();
    try {
      const result = await invoke(
        fx.tool('bash', { sandbox: 'none', workspace: mine, workspaceRoot: root }),
        {
          command: `cat ../run_other/notes.txt; echo; cat /proc/${holder.pid}/environ | tr '\\0' '\\n' | grep -c ${secret}`,
        },
      );
      expect(output(result)).toContain(secret);
      expect(output(result).trim().split('\n').at(-1)).toBe('1');
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('writes anywhere the worker may', async () => {
    const result = await invoke(fx.tool('bash', { sandbox: 'none', workspace: mine, workspaceRoot: root }), {
      command: `touch ${hostDir}/from-none && echo wrote`,
    });
    expect(output(result)).toContain('wrote');
  });
});
