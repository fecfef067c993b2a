/**
 * `/v1/skills` in process, on the test Redis (a Redis Cluster in the
 * `cluster` project): create, replace, read, list, delete; tenancy through
 * every route; the format and the limits refused with a 4xx that names the
 * problem, the server serving after; the skill toolset accepted at submit.
 */
import type { Skill, SkillList, SkillSummary } from '@tether/protocol';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ACME, BETA, build, expectServing, replayRun } from './helper.js';

const skillMd = (name: string, description = `Deploy ${name}.`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n# Steps\nRun scripts/go.sh.\n`;

function put(app: FastifyInstance, name: string, body: object, headers: Record<string, string> = ACME) {
  return app.inject({ method: 'PUT', url: `/v1/skills/${name}`, headers, payload: body });
}

describe('/v1/skills', () => {
  it('creates (201), reads, lists, replaces (200, pinned kept) and deletes a skill', async () => {
    const { app } = await build();
    const files = { 'SKILL.md': skillMd('deploy'), 'scripts/go.sh': '#!/bin/sh\necho go\n' };
    const created = await put(app, 'deploy', { files, pinned: true });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.headers.location).toBe('/v1/skills/deploy');
    const summary = created.json<SkillSummary>();
    expect(summary).toMatchObject({
      name: 'deploy',
      description: 'Deploy deploy.',
      pinned: true,
      version: 1,
      fileCount: 2,
      bytes: Buffer.byteLength(files['SKILL.md']) + Buffer.byteLength(files['scripts/go.sh']),
    });
    expect(Date.parse(summary.createdAt)).toBeGreaterThan(0);

    const read = await app.inject({ method: 'GET', url: '/v1/skills/deploy', headers: ACME });
    expect(read.statusCode).toBe(200);
    expect(read.json<Skill>()).toEqual({ ...summary, files });

    const replaced = await put(app, 'deploy', { files: { 'SKILL.md': skillMd('deploy', 'Deploy, v2.') } });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json<SkillSummary>()).toMatchObject({
      pinned: true,
      version: 2,
      fileCount: 1,
      description: 'Deploy, v2.',
    });
    await put(app, 'alpha', { files: { 'SKILL.md': skillMd('alpha') } });

    const listed = await app.inject({ method: 'GET', url: '/v1/skills', headers: ACME });
    expect(listed.statusCode).toBe(200);
    const list = listed.json<SkillList>();
    expect(list.data.map((s) => s.name)).toEqual(['alpha', 'deploy']);
    expect(list).toMatchObject({ count: 2, maxCount: 200, maxBytes: 52_428_800 });
    expect(list.bytes).toBe(list.data.reduce((sum, s) => sum + s.bytes, 0));

    const deleted = await app.inject({ method: 'DELETE', url: '/v1/skills/deploy', headers: ACME });
    expect(deleted.statusCode).toBe(204);
    const gone = await app.inject({ method: 'GET', url: '/v1/skills/deploy', headers: ACME });
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toEqual({ error: { code: 'ERR_SKILL_NOT_FOUND', message: 'No skill deploy.' } });
    expect((await app.inject({ method: 'DELETE', url: '/v1/skills/deploy', headers: ACME })).statusCode).toBe(
      404,
    );
  });

  it("keeps tenants apart: another tenant's key sees nothing, changes nothing, through every route", async () => {
    const { app } = await build();
    await put(app, 'deploy', { files: { 'SKILL.md': skillMd('deploy') } });
    const list = await app.inject({ method: 'GET', url: '/v1/skills', headers: BETA });
    expect(list.json<SkillList>()).toMatchObject({ data: [], count: 0, bytes: 0 });
    expect((await app.inject({ method: 'GET', url: '/v1/skills/deploy', headers: BETA })).statusCode).toBe(
      404,
    );
    expect((await app.inject({ method: 'DELETE', url: '/v1/skills/deploy', headers: BETA })).statusCode).toBe(
      404,
    );
    // beta's own skill of the same name is beta's: acme's stays as it was.
    expect(
      (await put(app, 'deploy', { files: { 'SKILL.md': skillMd('deploy', 'Beta.') } }, BETA)).statusCode,
    ).toBe(201);
    const acme = await app.inject({ method: 'GET', url: '/v1/skills/deploy', headers: ACME });
    expect(acme.json<Skill>()).toMatchObject({ description: 'Deploy deploy.', version: 1 });
    // No key: 401 on every route.
    for (const [method, url] of [
      ['GET', '/v1/skills'],
      ['GET', '/v1/skills/deploy'],
      ['PUT', '/v1/skills/deploy'],
      ['DELETE', '/v1/skills/deploy'],
    ] as const) {
      const response = await app.inject({
        method,
        url,
        payload: method === 'PUT' ? { files: {} } : undefined,
      });
      expect(response.statusCode, `${method} ${url}`).toBe(401);
    }
  });

  it('refuses a bad skill with a 400 naming every problem, and serves after', async () => {
    const { app } = await build();
    const cases: [string, object, string, string][] = [
      ['Bad_Name', { files: { 'SKILL.md': skillMd('x') } }, 'ERR_VALIDATION', 'params.name'],
      ['deploy', { files: {} }, 'ERR_VALIDATION', 'files'],
      ['deploy', { files: { 'SKILL.md': skillMd('deploy') }, extra: 1 }, 'ERR_VALIDATION', 'extra'],
      ['deploy', { files: { 'SKILL.md': 1 } }, 'ERR_VALIDATION', 'SKILL.md'],
      ['deploy', { files: { 'README.md': 'x' } }, 'ERR_SKILL_INVALID', 'The skill has no SKILL.md'],
      [
        'deploy',
        { files: { 'SKILL.md': skillMd('other') } },
        'ERR_SKILL_INVALID',
        'SKILL.md\'s name "other" must be the skill\'s folder name, "deploy".',
      ],
      [
        'deploy',
        { files: { 'SKILL.md': '---\nname: deploy\ndescription: d\nauthor: me\n---\nx\n' } },
        'ERR_SKILL_INVALID',
        'SKILL.md\'s frontmatter key "author" is not allowed',
      ],
      [
        'deploy',
        { files: { 'SKILL.md': skillMd('deploy'), '../x.sh': 'x' } },
        'ERR_SKILL_INVALID',
        'The path "../x.sh" leads outside the skill folder.',
      ],
      [
        'deploy',
        { files: { 'SKILL.md': skillMd('deploy'), 'assets/big.txt': 'x'.repeat(1_048_577) } },
        'ERR_SKILL_INVALID',
        'assets/big.txt is 1048577 bytes',
      ],
    ];
    for (const [name, body, code, text] of cases) {
      const response = await put(app, name, body);
      expect(response.statusCode, `${name} ${JSON.stringify(body).slice(0, 80)}`).toBe(400);
      const error = response.json<{ error: { code: string; message: string } }>().error;
      expect(error.code, error.message).toBe(code);
      expect(error.message).toContain(text);
    }
    // Several problems at once, all named.
    const many = await put(app, 'deploy', {
      files: { 'SKILL.md': '---\nname: deploy\n---\n', '/abs': 'x' },
    });
    expect(many.json<{ error: { message: string } }>().error.message).toBe(
      'The skill deploy was refused: The path "/abs" is absolute; give a path relative to the skill folder. SKILL.md\'s frontmatter needs description. SKILL.md has no body: after the frontmatter, write the instructions the skill gives.',
    );
    expect(
      (await app.inject({ method: 'GET', url: '/v1/skills', headers: ACME })).json<SkillList>().count,
    ).toBe(0);
    await expectServing(app);
  });

  it('takes a body larger than the general limit up to 8 MiB, and answers 413 past it', async () => {
    const { app } = await build({ env: { TETHER_BODY_LIMIT: '65536' } });
    const files: Record<string, string> = { 'SKILL.md': skillMd('big') };
    for (let i = 0; i < 3; i++) files[`assets/${i}.txt`] = 'x'.repeat(1_000_000);
    expect((await put(app, 'big', { files })).statusCode).toBe(201);
    for (let i = 3; i < 9; i++) files[`assets/${i}.txt`] = 'x'.repeat(1_000_000);
    const tooLarge = await put(app, 'big', { files });
    expect(tooLarge.statusCode).toBe(413);
    expect(tooLarge.json<{ error: { code: string } }>().error.code).toBe('ERR_BODY_TOO_LARGE');
    await expectServing(app);
  });

  it('refuses a skill past the tenant limits with a 409 naming the limit', async () => {
    const { app } = await build({ env: { TETHER_SKILLS_MAX_COUNT: '2', TETHER_SKILLS_MAX_BYTES: '2048' } });
    expect((await put(app, 'a', { files: { 'SKILL.md': skillMd('a') } })).statusCode).toBe(201);
    expect((await put(app, 'b', { files: { 'SKILL.md': skillMd('b') } })).statusCode).toBe(201);
    const third = await put(app, 'c', { files: { 'SKILL.md': skillMd('c') } });
    expect(third.statusCode).toBe(409);
    expect(third.json()).toEqual({
      error: {
        code: 'ERR_SKILLS_LIMIT',
        message:
          'The tenant has 2 skills, the most it may have (TETHER_SKILLS_MAX_COUNT 2); delete one first.',
      },
    });
    const big = await put(app, 'a', { files: { 'SKILL.md': skillMd('a'), 'x.txt': 'x'.repeat(2_000) } });
    expect(big.statusCode).toBe(409);
    expect(big.json<{ error: { message: string } }>().error.message).toMatch(
      /^The tenant's skills would hold \d+ bytes, over TETHER_SKILLS_MAX_BYTES \(2048\)\.$/,
    );
    // Another tenant has its own room.
    expect((await put(app, 'c', { files: { 'SKILL.md': skillMd('c') } }, BETA)).statusCode).toBe(201);
    await expectServing(app);
  });

  it('is in the OpenAPI document, and the skill toolset is accepted at submit', async () => {
    const { app } = await build();
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, object>;
    }>();
    expect(Object.keys(doc.paths['/v1/skills/{name}'] ?? {}).sort()).toEqual(['delete', 'get', 'put']);
    expect(Object.keys(doc.paths['/v1/skills'] ?? {})).toEqual(['get']);
    const submitted = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: replayRun(undefined, { toolsets: ['base', 'skill'] }),
    });
    expect(submitted.statusCode, submitted.body).toBe(202);
    const catalog = (await app.inject({ method: 'GET', url: '/v1/tools', headers: ACME })).json<{
      toolsets: string[];
      tools: { name: string; toolset: string }[];
    }>();
    expect(catalog.toolsets).toContain('skill');
    expect(catalog.tools.filter((tool) => tool.toolset === 'skill').map((tool) => tool.name)).toEqual([
      'read_skill',
      'read_skill_file',
      'skill_manage',
    ]);
  });
});
