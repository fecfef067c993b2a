import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBwrap } from '@tether/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkSandbox, type SandboxReport, sandboxDegraded } from './sandbox-report.js';

const works = (await probeBwrap()).ok;
const isRoot = process.getuid?.() === 0;
const user = { uid: 65534, gid: 65534 };
let base: string;

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'tether-report-'));
  await chmod(base, 0o755);
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('checkSandbox', () => {
  it('reports none as asked, with the cgroup support', async () => {
    const report = await checkSandbox({ sandbox: 'none', sandboxUser: user, workspaceRoot: base });
    expect(report).toMatchObject({ requested: 'none', effective: 'none' });
    expect(['v1', 'v2', 'none']).toContain(report.cgroups);
  });

  it.skipIf(!works)('reports bwrap with the uid commands run as', async () => {
    const report = await checkSandbox({ sandbox: 'auto', sandboxUser: user, workspaceRoot: base });
    expect(report).toMatchObject({ requested: 'auto', effective: 'bwrap' });
    if (isRoot) expect(report.uid).toBe(65534);
  });

  it.skipIf(!works || !isRoot)(
    'auto refuses bwrap when the sandbox user cannot reach the workspace root, and says why',
    async () => {
      const hidden = join(base, 'private');
      await mkdir(join(hidden, 'workspaces'), { recursive: true });
      await chmod(hidden, 0o700);
      const auto = await checkSandbox({
        sandbox: 'auto',
        sandboxUser: user,
        workspaceRoot: join(hidden, 'workspaces'),
      });
      expect(auto).toMatchObject({
        effective: 'none',
        fix: `chmod o+x ${hidden}`,
        bwrap: expect.any(String),
      });
      expect(auto.reason).toContain(`${hidden} is not searchable by uid 65534`);
      expect(sandboxDegraded(auto)).toBe(true);
      const strict = await checkSandbox({
        sandbox: 'bwrap',
        sandboxUser: user,
        workspaceRoot: join(hidden, 'workspaces'),
      });
      expect(strict).toMatchObject({ effective: 'unavailable', fix: `chmod o+x ${hidden}` });
      expect(sandboxDegraded(strict)).toBe(true);
    },
  );
});

describe('sandboxDegraded', () => {
  const report = (fields: Partial<SandboxReport>): SandboxReport => ({
    requested: 'auto',
    effective: 'bwrap',
    cgroups: 'v2',
    ...fields,
  });

  it.each([
    ['bwrap that works', report({ requested: 'bwrap', bwrap: '/usr/bin/bwrap' }), false],
    ['auto on bwrap', report({ bwrap: '/usr/bin/bwrap' }), false],
    ['none, as asked', report({ requested: 'none', effective: 'none', bwrap: '/usr/bin/bwrap' }), false],
    ['auto without bubblewrap installed', report({ effective: 'none' }), false],
    [
      'auto fallen back with bubblewrap installed',
      report({ effective: 'none', bwrap: '/usr/bin/bwrap' }),
      true,
    ],
    ['bwrap broken (bash refused)', report({ requested: 'bwrap', effective: 'unavailable' }), true],
  ])('%s: %s', (_name, input, degraded) => {
    expect(sandboxDegraded(input)).toBe(degraded);
  });
});
