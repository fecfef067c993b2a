/**
 * At most one live execution of a call, with real processes: an owner (a
 * process like a worker, see fixtures/owner.mjs) is killed with -9 at points
 * spread over a sandboxed call's launch, and a new owner runs the same call
 * again: an owner's first call, and a call of an owner that has run commands
 * before, whose launch starts at once. The call's side effect (a file each
 * execution appends to, with an id and times) must never show two executions
 * alive at once. A stopped owner's command is killed by its watchdog within
 * the lease.
 *
 * The kill points: the launch is timed first (an owner that is not killed),
 * and each trial kills in its own slice of that time and a little past it, at
 * a random point of the slice, so that a few trials cover every phase of the
 * launch (spawn, the launcher, bwrap, the command's first lines) and each run
 * of the file tries other points. `TETHER_LAUNCH_FAULT_TRIALS` sets the trials
 * of each test (default 8); `pnpm stress:launch-faults` runs 30.
 */
import { chmod, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { killAllSpawned, spawnNode, type TestProcess } from '@tether/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { probeBwrap } from '../src/sandbox.js';

const OWNER = fileURLToPath(new URL('./fixtures/owner.mjs', import.meta.url));
const probe = await probeBwrap();
const sandbox = probe.ok ? 'bwrap' : 'none';
if (!probe.ok && process.env.CI === 'true') throw new Error(`bwrap must work in CI: ${probe.detail}`);

/**
 * Each execution appends `<id> <phase> <epoch ns>` lines: start, a tick every
 * 20 ms for about 200 ms, then end.
 */
const COMMAND = [
  'id=$(cat /proc/sys/kernel/random/uuid)',
  'echo "$id start $(date +%s%N)" >> effect',
  'for i in $(seq 10); do sleep 0.02; echo "$id tick $(date +%s%N)" >> effect; done',
  'echo "$id end $(date +%s%N)" >> effect',
].join('; ');

/**
 * The run id of this file's calls, its own per invocation: the owners' clean-up kills a run's
 * leftovers across the whole host, so two runs of this file at once must not share one.
 */
const RUN_ID = `run_faults_${process.pid}`;

let root: string;
let workspace: string;

beforeEach(async () => {
  root = await mkdtemp('/var/tmp/tether-launch-');
  await chmod(root, 0o755);
  workspace = path.join(root, RUN_ID);
  await mkdir(workspace);
});

afterEach(async () => {
  await killAllSpawned();
  await rm(root, { recursive: true, force: true });
});

afterAll(killAllSpawned);

/** With `warm`, the owner has run a command before the call (its sandbox probed, its lease keeper running). */
function owner(runId: string, leaseMs = 2000, command = COMMAND, warm = false): TestProcess {
  const args = [workspace, root, runId, command, sandbox, String(leaseMs)];
  return spawnNode(OWNER, {}, warm ? [...args, 'warm'] : args);
}

/** Like {@link COMMAND}, for about 6 s. */
const LONG_COMMAND = COMMAND.replace('seq 10', 'seq 300');

interface Line {
  id: string;
  phase: string;
  at: bigint;
}

async function effectLines(): Promise<Line[]> {
  const text = await readFile(path.join(workspace, 'effect'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [id = '', phase = '', at = '0'] = line.split(' ');
      return { id, phase, at: BigInt(at) };
    });
}

/** The kill -9 trials of each launch test (`TETHER_LAUNCH_FAULT_TRIALS`, default 8). */
const TRIALS = trialCount(process.env.TETHER_LAUNCH_FAULT_TRIALS);

function trialCount(value: string | undefined): number {
  if (value === undefined || value === '') return 8;
  const trials = Number(value);
  if (!Number.isInteger(trials) || trials < 1)
    throw new Error(`TETHER_LAUNCH_FAULT_TRIALS must be a whole number of at least 1, not ${value}`);
  return trials;
}

/** How far past the measured launch the kill points reach: into the command's first lines. */
const PAST_LAUNCH = 1.25;

/** For each execution, no line of it is written after a later execution started. */
function overlaps(lines: Line[]): string[] {
  const starts = new Map<string, bigint>();
  for (const line of lines) if (line.phase === 'start') starts.set(line.id, line.at);
  const problems: string[] = [];
  for (const [id, start] of starts) {
    let next: bigint | undefined;
    for (const other of starts.values())
      if (other > start && (next === undefined || other < next)) next = other;
    if (next === undefined) continue;
    const late = lines.filter((line) => line.id === id && line.at > next);
    if (late.length > 0) problems.push(`${id} wrote ${late.length} line(s) after the next execution started`);
  }
  return problems;
}

/**
 * How long a call's launch takes here and now, in ms: from the owner's `launching` (as this process
 * reads it) to the command's first line, for an owner that runs the call to its end.
 */
async function measureLaunch(runId: string, warm: boolean): Promise<number> {
  const measured = owner(runId, 2000, COMMAND, warm);
  await measured.waitFor(/launching/);
  const launching = Date.now();
  await measured.waitFor(/done/, 30_000);
  await measured.exited;
  const start = (await effectLines()).find((line) => line.phase === 'start');
  if (start === undefined) throw new Error(`the measured call wrote no start line: ${measured.output()}`);
  return Math.max(1, Number(start.at / 1_000_000n) - launching);
}

/** `trials` kill delays (ms): one in each of `trials` equal slices of `spanMs`, at a random point of it. */
function killDelays(trials: number, spanMs: number): number[] {
  const slice = spanMs / trials;
  return Array.from({ length: trials }, (_, trial) => Math.floor((trial + Math.random()) * slice));
}

/**
 * Times the launch, then, {@link TRIALS} times, kills a first owner of the call with -9 at the trial's
 * point after it says it launches and lets a second owner run the call to its end; checks the side effect.
 */
async function killDuringLaunches(warm: boolean): Promise<void> {
  const runId = RUN_ID;
  const launchMs = await measureLaunch(runId, warm);
  const delays = killDelays(TRIALS, launchMs * PAST_LAUNCH);
  const results: string[] = [];
  for (const delayMs of delays) {
    const first = owner(runId, 2000, COMMAND, warm);
    await first.waitFor(/launching/);
    await delay(delayMs);
    first.child.kill('SIGKILL');
    await first.exited;
    // A lease of its own that a loaded host cannot outrun: its execution must end, killed by nothing.
    const second = owner(runId, 10_000);
    results.push((await second.waitFor(/done .*/, 30_000))[0]);
    await second.exited;
  }
  const lines = await effectLines();
  const points = `launch ${launchMs} ms, kills at ${delays.join(', ')} ms`;
  expect(overlaps(lines), points).toEqual([]);
  // The measured execution and the last execution of every trial ran to their end.
  const ends = lines.filter((line) => line.phase === 'end').length;
  expect(ends, `${points}; the second owners: ${results.join('; ')}`).toBeGreaterThanOrEqual(TRIALS + 1);
}

describe(`one live execution of a call (sandbox ${sandbox})`, () => {
  it(
    `a call interrupted by kill -9 at points of its launch is never alive twice (${TRIALS} trials)`,
    async () => {
      // Somewhere in the launch: spawn, the launcher, bwrap, the command's first lines.
      await killDuringLaunches(false);
    },
    120_000 + TRIALS * 15_000,
  );

  it(
    `a call of an owner that has run commands before, killed -9 at points of its launch, is never alive twice (${TRIALS} trials)`,
    async () => {
      // The sandbox prepared after the owner's first command, still being built or waiting, the command
      // sent to it, and the command's first lines: tens of ms here, more under load.
      await killDuringLaunches(true);
    },
    120_000 + TRIALS * 15_000,
  );

  it("a stopped owner's command is killed by its watchdog within the lease", async () => {
    const first = owner(`run_stopped_${process.pid}`, 500, LONG_COMMAND);
    await first.waitFor(/launching/);
    // Wait for the command to be running, then freeze its owner (as SIGSTOP past its lock would).
    for (let i = 0; i < 500 && (await effectLines()).length < 3; i++) await delay(10);
    first.child.kill('SIGSTOP');
    // The lease (500 ms) and a margin: the watchdog has killed the command by now.
    await delay(1500);
    const count = (await effectLines()).length;
    await delay(1000);
    const lines = await effectLines();
    // Nothing more was written (a live command writes every 20 ms), and the command never reached its end.
    expect(lines.length).toBe(count);
    expect(lines.some((line) => line.phase === 'end')).toBe(false);
    first.child.kill('SIGKILL');
  });
});
