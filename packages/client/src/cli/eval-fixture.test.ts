/**
 * The long task's logs: the fixture's generator (`eval/fixture/src/logs.js`), run as the task tells
 * the model to run it, writes the same files every time, and they are what the task says and what
 * it needs: each log whole in one `read_file` result, and all of them together more tokens than a
 * model's context window holds.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countTokens } from '@tether/agent';
import { spawnNode } from '@tether/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTaskSet } from './eval-tasks.js';

/** The largest window among today's models (GPT-5: 400k tokens, docs/agent.md "Context compaction"). */
const LARGEST_WINDOW = 400_000;
/** Characters of one tool result the loop keeps whole (`maxToolResultChars`, packages/agent). */
const TOOL_RESULT_CHARS = 30_000;
/** Lines `read_file` shows when the call gives no `limit` (`readFileDefaultLines`, packages/tools). */
const READ_FILE_LINES = 2000;

let dirs: string[] = [];
/** Each generated file, by name (`2026-03-01.log`), from two runs of the script in two workspaces. */
let first: Map<string, string>;
let second: Map<string, string>;
let printed: string;

/** Copies the fixture's generator into a fresh workspace, runs `node src/logs.js` there, reads logs/. */
async function generate(script: string): Promise<{ logs: Map<string, string>; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'tether-eval-logs-'));
  dirs.push(dir);
  await mkdir(join(dir, 'src'));
  await writeFile(join(dir, 'src', 'logs.js'), script);
  const child = spawnNode('src/logs.js', {}, [], { cwd: dir });
  const exit = await child.exited;
  expect(exit, child.output()).toEqual({ code: 0, signal: null });
  const logs = new Map<string, string>();
  for (const name of (await readdir(join(dir, 'logs'))).sort()) {
    logs.set(name, await readFile(join(dir, 'logs', name), 'utf8'));
  }
  return { logs, output: child.output() };
}

/** A file as `read_file` shows it: each line numbered, right-aligned in six columns, then a tab. */
function asReadFileShowsIt(text: string): string {
  return text
    .split('\n')
    .slice(0, -1)
    .map((line, index) => `${String(index + 1).padStart(6, ' ')}\t${line}`)
    .join('\n');
}

beforeAll(async () => {
  const { files } = await loadTaskSet();
  const script = files['src/logs.js'];
  if (script === undefined) throw new Error('the fixture has no src/logs.js');
  const a = await generate(script);
  const b = await generate(script);
  first = a.logs;
  second = b.logs;
  printed = a.output;
}, 30_000);

afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  dirs = [];
});

describe('the long task fixture (src/logs.js)', () => {
  it('writes the same bytes on every run: 40 daily logs from 2026-03-01', () => {
    expect([...first.keys()]).toEqual([...second.keys()]);
    for (const [name, text] of first) expect(second.get(name) === text, name).toBe(true);
    expect(first.size).toBe(40);
    expect([...first.keys()][0]).toBe('2026-03-01.log');
    expect([...first.keys()].at(-1)).toBe('2026-04-09.log');
    expect(printed).toMatch(/^Wrote 40 log files to logs\/ \(\d+ bytes\)\.\n$/);
  });

  it('puts exactly one FATAL line in each log, with an id of its own, away from its start and end', () => {
    const ids = new Set<string>();
    for (const [name, text] of first) {
      const lines = text.split('\n');
      const fatal = lines.flatMap((line, index) => (/fatal/i.test(line) ? [index] : []));
      expect(fatal, name).toHaveLength(1);
      const at = fatal[0] as number;
      expect(at, name).toBeGreaterThanOrEqual(10);
      expect(at, name).toBeLessThan(lines.length - 10);
      const id = /^\S+ FATAL .* id=(FTL-[0-9A-Z]{6}) /.exec(lines[at] as string)?.[1];
      expect(id, name).toBeDefined();
      expect(text.split('id=').length, `${name}: "id=" only on the FATAL line`).toBe(2);
      ids.add(id as string);
    }
    expect(ids.size).toBe(first.size);
  });

  it('keeps each log whole in one read_file result, and all of them past the largest window', () => {
    let tokens = 0;
    for (const [name, text] of first) {
      expect(text.split('\n').length - 1, name).toBeLessThanOrEqual(READ_FILE_LINES);
      const shown = asReadFileShowsIt(text);
      expect(shown.length, name).toBeLessThanOrEqual(TOOL_RESULT_CHARS);
      // Large enough that the reads are what fills the window, not the turns around them.
      expect(shown.length, name).toBeGreaterThan(TOOL_RESULT_CHARS * 0.8);
      tokens += countTokens(shown);
    }
    expect(tokens).toBeGreaterThan(LARGEST_WINDOW * 1.2);
  });

  it('is what the long task tells the model to run and read', async () => {
    const { tasks } = await loadTaskSet();
    const long = tasks.find((task) => task.kind === 'long');
    expect(long?.input).toContain('`node src/logs.js`');
    expect(long?.input).toContain('logs/');
    expect(long?.input).toContain('exactly one line at level FATAL');
    expect(long?.input).toContain('id=FTL-');
    // One read_file call a reply, and the generator and the report: within the task's own turn limit.
    expect(long?.maxSteps).toBeGreaterThanOrEqual(first.size + 10);
  });
});
