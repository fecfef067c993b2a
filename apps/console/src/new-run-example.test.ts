import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  EXAMPLE_FILES,
  EXAMPLE_SCRIPT,
  EXAMPLE_STEPS,
  EXAMPLE_TASK,
  EXAMPLE_TOOLSETS,
  exampleForm,
} from './new-run-example.js';
import { buildRequest } from './new-run-request.js';

const DEMO = new URL('../../../scripts/demo/', import.meta.url);

describe("the scripted example is pnpm demo's run", () => {
  it('has the files of scripts/demo/project, byte for byte, in the order of their names', async () => {
    const names = (await readdir(new URL('project/', DEMO))).sort();
    const onDisk = await Promise.all(
      names.map(async (path) => ({
        path,
        content: await readFile(new URL(`project/${path}`, DEMO), 'utf8'),
      })),
    );
    expect(EXAMPLE_FILES).toEqual(onDisk);
  });

  it('plays scripts/demo/replay.json, and the task of scripts/demo.mjs', async () => {
    expect(EXAMPLE_SCRIPT).toStrictEqual(JSON.parse(await readFile(new URL('replay.json', DEMO), 'utf8')));
    const demo = await readFile(new URL('../demo.mjs', DEMO), 'utf8');
    expect(demo).toContain(`const task = '${EXAMPLE_TASK}';`);
  });

  it("explains each of the script's tools, in the order it first calls them, and names their toolsets", () => {
    const calls = EXAMPLE_SCRIPT.flatMap((turn) =>
      'toolCalls' in turn ? turn.toolCalls.map((call) => call.name) : [],
    );
    expect(EXAMPLE_STEPS.map((step) => step.tool)).toEqual([...new Set(calls)]);
    expect(calls).toContain('clarify');
    expect([...EXAMPLE_TOOLSETS].sort()).toEqual(['base', 'interaction', 'planning']);
  });
});

describe('exampleForm', () => {
  const catalog = {
    toolsets: ['base', 'planning', 'interaction', 'crew', 'memory'],
    defaultToolsets: ['base', 'interaction'],
  };

  it("sends the task, the files, the replay script as the model, and the catalog's defaults with what the script needs", () => {
    expect(buildRequest(exampleForm(catalog))).toEqual({
      body: {
        input: 'Fix the greeting in greet.js and check that it works.',
        toolsets: ['base', 'planning', 'interaction'],
        files: Object.fromEntries(EXAMPLE_FILES.map((file) => [file.path, file.content])),
        model: { provider: 'replay', script: EXAMPLE_SCRIPT },
      },
      problems: [],
    });
  });

  it("keeps the catalog's other defaults, in its order, and leaves toolsets to the API before the catalog is read", () => {
    expect(exampleForm({ ...catalog, defaultToolsets: ['memory', 'base'] }).toolsets).toEqual([
      'base',
      'planning',
      'interaction',
      'memory',
    ]);
    expect('toolsets' in buildRequest(exampleForm(undefined)).body).toBe(false);
  });
});
