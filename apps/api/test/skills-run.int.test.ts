/**
 * Skills end to end, over real ports: an API and a worker process on the
 * test Redis, a fake OpenAI-compatible server as the model. The model sees
 * the tenant's skills index in its system prompt (never another tenant's),
 * runs a skill's script through bash under bubblewrap from the read-only
 * /run/skills, cannot change it, and writes a skill with skill_manage that
 * the next run (on any worker) sees at once.
 */
import type { Run, SkillList } from '@tether/protocol';
import { FakeOpenAIServer, streamText, streamToolCalls } from '@tether/testing';
import { probeBwrap } from '@tether/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { API_KEYS, BETA } from './helper.js';
import { call, deployment, startApi, startWorker, stopAll } from './processes.js';

const cleanups: (() => Promise<void>)[] = [];
const bwrap = await probeBwrap();
if (!bwrap.ok && process.env.CI === 'true') throw new Error(`bubblewrap must work in CI: ${bwrap.detail}`);

afterEach(async (context) => {
  await stopAll(context);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const skillMd = (name: string, description: string, body: string) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}`;

async function runOf(base: string, runId: string): Promise<Run> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const run = (await call<Run>(base, 'GET', `/v1/runs/${runId}`)).body;
    if (['completed', 'failed', 'cancelled'].includes(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} did not end: ${JSON.stringify(run)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface ModelRequest {
  messages: { role: string; content?: string; tool_call_id?: string }[];
  tools?: { function: { name: string } }[];
}

async function stack(sandbox: 'bwrap' | 'none', workers = 2) {
  const env = await deployment(`skills-${sandbox}`);
  const fake = await new FakeOpenAIServer().start();
  cleanups.push(() => fake.close());
  const model = { TETHER_MODEL: 'fake-model', OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'sk-fake' };
  // One after another: each process gets the machine to itself while it starts.
  const api = await startApi(env, API_KEYS, 'api', model);
  for (let i = 1; i <= workers; i++)
    await startWorker(env, `worker-${i}`, 2, { ...model, TETHER_SANDBOX: sandbox });
  // acme's skill with a script, and one of beta's that acme's runs must never see.
  const hello = await call(api.base, 'PUT', '/v1/skills/hello', {
    files: {
      'SKILL.md': skillMd(
        'hello',
        'Greets someone by running scripts/hi.sh NAME.',
        '# Steps\nRun scripts/hi.sh NAME.\n',
      ),
      'scripts/hi.sh': '#!/bin/sh\necho "hi $1 from the hello skill"\n',
    },
    pinned: true,
  });
  expect(hello.status).toBe(201);
  const secret = await call(
    api.base,
    'PUT',
    '/v1/skills/beta-secret',
    { files: { 'SKILL.md': skillMd('beta-secret', 'Beta only.', 'Beta steps.\n') } },
    BETA,
  );
  expect(secret.status).toBe(201);
  return { api, fake };
}

/** The body of model request `index` (one that was made: a missing one fails the test). */
function request(fake: FakeOpenAIServer, index: number): ModelRequest {
  const made = fake.requests[index];
  if (made === undefined) throw new Error(`no model request ${index} (${fake.requests.length} made)`);
  return made.body as ModelRequest;
}
const system = (fake: FakeOpenAIServer, index: number) => request(fake, index).messages[0]?.content ?? '';
const toolResult = (fake: FakeOpenAIServer, index: number) =>
  request(fake, index).messages.at(-1)?.content ?? '';

describe.skipIf(!bwrap.ok)('a run with the skill toolset, under bubblewrap', () => {
  it('sees the index, runs a script from the read-only /run/skills, and writes a skill the next run sees', async () => {
    const { api, fake } = await stack('bwrap');
    const command = [
      '/run/skills/hello/scripts/hi.sh world',
      'touch /run/skills/hello/new 2>/dev/null; echo "touch=$?"',
      'rm -f /run/skills/hello/SKILL.md 2>/dev/null; echo "rm=$?"',
      'echo "dir=$TETHER_SKILLS_DIR"',
      'ls /run/skills',
    ].join('; ');
    fake.enqueue(
      streamToolCalls([{ id: 'call_bash', name: 'bash', arguments: JSON.stringify({ command }) }]),
      streamToolCalls([
        {
          id: 'call_write',
          name: 'skill_manage',
          arguments: JSON.stringify({
            action: 'create',
            name: 'greet-twice',
            content: skillMd('greet-twice', 'Greets twice with the hello skill.', 'Run hello twice.\n'),
          }),
        },
      ]),
      streamToolCalls([
        {
          id: 'call_pinned',
          name: 'skill_manage',
          arguments: JSON.stringify({ action: 'delete', name: 'hello' }),
        },
      ]),
      streamText('done'),
      // The next run: it answers at once.
      streamText('second done'),
    );
    const submitted = await call<{ id: string }>(api.base, 'POST', '/v1/runs', {
      input: 'Greet the world with the matching skill.',
      toolsets: ['base', 'skill'],
    });
    expect(submitted.status).toBe(202);
    const run = await runOf(api.base, submitted.body.id);
    expect(run.status, JSON.stringify(run.error)).toBe('completed');

    // The system prompt: the index (acme's skill, fenced as data), how to load one, and the mount.
    const prompt = system(fake, 0);
    expect(prompt).toContain('# Skills');
    expect(prompt).toContain('load that skill with read_skill and follow it');
    expect(prompt).toContain('`/run/skills/<name>/` (read-only)');
    expect(prompt).toContain('- hello: Greets someone by running scripts/hi.sh NAME.');
    expect(prompt).not.toContain('beta-secret');
    const offered = (request(fake, 0).tools ?? []).map((tool) => tool.function.name);
    expect(offered).toEqual(
      expect.arrayContaining(['bash', 'read_skill', 'read_skill_file', 'skill_manage']),
    );

    // The script ran; nothing in the mount could change; only acme's skills are there.
    const output = toolResult(fake, 1);
    expect(output).toContain('hi world from the hello skill');
    expect(output).toMatch(/touch=[1-9]/);
    expect(output).toMatch(/rm=[1-9]/);
    expect(output).toContain('dir=/run/skills');
    expect(output).toMatch(/^hello$/m);
    expect(output).not.toContain('beta-secret');
    // skill_manage wrote a skill; the pinned one could not be deleted.
    expect(toolResult(fake, 2)).toMatch(/^Created the skill "greet-twice": version \d+/);
    expect(toolResult(fake, 3)).toContain('"hello" is pinned');
    const listed = await call<SkillList>(api.base, 'GET', '/v1/skills');
    expect(listed.body.data.map((skill) => skill.name)).toEqual(['greet-twice', 'hello']);

    // The next run, on either worker, lists the new skill at once.
    const next = await call<{ id: string }>(api.base, 'POST', '/v1/runs', {
      input: 'Again.',
      toolsets: ['base', 'skill'],
    });
    expect((await runOf(api.base, next.body.id)).output).toBe('second done');
    expect(system(fake, 4)).toContain('- greet-twice: Greets twice with the hello skill.');
  });
});

describe('a run with the skill toolset, without a sandbox', () => {
  it("gets the host folder's path in the prompt, read-only by its permissions", async () => {
    const { api, fake } = await stack('none', 1);
    fake.enqueue(
      streamToolCalls([
        {
          id: 'call_bash',
          name: 'bash',
          arguments: JSON.stringify({
            command: '"$TETHER_SKILLS_DIR"/hello/scripts/hi.sh host; echo "dir=$TETHER_SKILLS_DIR"',
          }),
        },
      ]),
      streamText('done'),
    );
    const submitted = await call<{ id: string }>(api.base, 'POST', '/v1/runs', {
      input: 'Greet.',
      toolsets: ['base', 'skill'],
    });
    expect((await runOf(api.base, submitted.body.id)).status).toBe('completed');
    const dir = /dir=(\S+)/.exec(toolResult(fake, 1))?.[1] ?? '';
    expect(dir).toMatch(/^\/.+\/v\d+$/);
    expect(system(fake, 0)).toContain(`\`${dir}/<name>/\` (read-only)`);
    expect(toolResult(fake, 1)).toContain('hi host from the hello skill');
  });
});
