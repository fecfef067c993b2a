import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import {
  findProcessTree,
  isProcessAlive,
  killProcessTree,
  PROCESS_TAG_VARIABLE,
  processStartTicks,
} from './process-tree.js';

const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Dead already.
    }
  }
});

/** A `sleep` in a session of its own (no group, no parent to find it by) carrying `tag`. */
async function taggedSleep(tag: string): Promise<number> {
  const child = spawn('/bin/sleep', ['300'], {
    detached: true,
    stdio: 'ignore',
    env: { [PROCESS_TAG_VARIABLE]: tag },
  });
  await once(child, 'spawn');
  child.unref();
  started.push(child.pid as number);
  return child.pid as number;
}

describe('findProcessTree', () => {
  it('finds a process by its tag alone, unless it started before the command', async () => {
    const tag = `run_tree.${process.pid}`;
    const pid = await taggedSleep(tag);
    const ticks = processStartTicks(pid);
    expect(ticks).toBeGreaterThan(0);
    // No parent or group leads to it: only the tag does (a setsid orphan of the command's).
    const identity = { pid: 2 ** 22 + 1, tag, rootAlive: () => false };
    expect(findProcessTree(identity)).toEqual([pid]);
    expect(findProcessTree({ ...identity, startTicks: ticks })).toEqual([pid]);
    // A command that started after it cannot have started it: its environment is not read.
    expect(findProcessTree({ ...identity, startTicks: (ticks as number) + 1 })).toEqual([]);
    expect(findProcessTree({ ...identity, tag: `${tag}0` })).toEqual([]);
  });

  it('kills what it finds, and reports nothing left', async () => {
    const tag = `run_tree.${process.pid}.kill`;
    const pid = await taggedSleep(tag);
    const left = await killProcessTree({
      pid: 2 ** 22 + 1,
      tag,
      rootAlive: () => false,
      startTicks: processStartTicks(pid),
    });
    expect(left).toEqual([]);
    expect(isProcessAlive(pid)).toBe(false);
  });

  it('knows no start time of a process that is gone', () => {
    expect(processStartTicks(2 ** 22 + 1)).toBeUndefined();
  });
});
