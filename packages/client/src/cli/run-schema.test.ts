/**
 * `tether run --schema file.json` against the fake API on a real port: the schema sent as the
 * run's `output`, the result printed as indented JSON in place of the output, and a usage error
 * (exit 2, nothing submitted) for a file that is missing, not JSON or not an object.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeApi } from '../testing/fake-api.js';
import { KeyboardInput, RecordingOutput } from '../testing/terminal.js';
import type { CliIo } from './io.js';
import { runCli } from './program.js';

let api: FakeApi;
let tmp: string;

beforeEach(async () => {
  api = new FakeApi();
  api.keys.set('key-a', 'tenant-a');
  await api.start();
  tmp = await mkdtemp(join(tmpdir(), 'tether-cli-schema-'));
});

afterEach(async () => {
  await api.close();
  await rm(tmp, { recursive: true, force: true });
});

function terminal() {
  const stdout = new RecordingOutput(false);
  const stderr = new RecordingOutput(false);
  const io: CliIo = {
    stdout,
    stderr,
    stdin: new KeyboardInput(false),
    env: { TETHER_URL: api.baseUrl, TETHER_API_KEY: 'key-a', NO_COLOR: '1' },
  };
  return { io, stdout, stderr };
}

const SCHEMA = { type: 'object', properties: { verdict: { type: 'string' } }, required: ['verdict'] };

describe('tether run --schema', () => {
  it('submits the schema as output and prints the result as JSON in place of the text', async () => {
    await writeFile(join(tmp, 'verdict.json'), JSON.stringify(SCHEMA));
    api.onSubmit = (run) => {
      api.append(run.run.id, 'message', { role: 'assistant', content: 'It passes.', toolCalls: [] });
      api.append(run.run.id, 'run.completed', { output: 'Verdict given.', result: { verdict: 'pass' } });
    };
    const { io, stdout } = terminal();
    expect(await runCli(['run', 'judge it', '--schema', join(tmp, 'verdict.json')], io)).toBe(0);
    expect(api.requests[0]?.body).toEqual({ input: 'judge it', output: { schema: SCHEMA } });
    expect(stdout.plain).toContain('\nCompleted\n{\n  "verdict": "pass"\n}\n');
    expect(stdout.plain).not.toContain('Verdict given.');
  });

  it('refuses a missing file, one that is not JSON, and one that is no object (exit 2), submitting nothing', async () => {
    await writeFile(join(tmp, 'bad.json'), '{ type: object');
    await writeFile(join(tmp, 'list.json'), '[]');
    for (const [file, message] of [
      ['missing.json', /--schema .*missing\.json: cannot read the file/],
      ['bad.json', /--schema .*bad\.json: not valid JSON/],
      ['list.json', /--schema .*list\.json: must be a JSON object/],
    ] as const) {
      const { io, stderr } = terminal();
      expect(await runCli(['run', 'x', '--schema', join(tmp, file)], io)).toBe(2);
      expect(stderr.plain).toMatch(message);
    }
    expect(api.requests).toHaveLength(0);
  });
});
