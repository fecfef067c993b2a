/** /openapi.json for client generators: a unique operationId on every operation, named path parameters. */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACME, build, submit } from './helper.js';

interface OpenApiOperation {
  operationId?: string;
  parameters?: { name: string; in: string; required?: boolean }[];
}

describe('/openapi.json for client generators', () => {
  it('gives every operation a unique camelCase operationId', async () => {
    const { app } = await build();
    const spec = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, Record<string, OpenApiOperation>>;
    }>();
    const operations = Object.entries(spec.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ at: `${method} ${path}`, operation })),
    );
    expect(operations.length).toBeGreaterThan(30);
    const missing = operations.filter(({ operation }) => operation.operationId === undefined);
    expect(missing.map(({ at }) => at)).toEqual([]);
    const ids = operations.map(({ operation }) => operation.operationId as string);
    for (const id of ids) expect(id).toMatch(/^[a-z][a-zA-Z0-9]*$/);
    expect(ids.filter((id, index) => ids.indexOf(id) !== index)).toEqual([]);
    const byId = Object.fromEntries(operations.map(({ at, operation }) => [operation.operationId, at]));
    expect(byId).toMatchObject({
      createRun: 'post /v1/runs',
      listRuns: 'get /v1/runs',
      getRun: 'get /v1/runs/{id}',
      cancelRun: 'post /v1/runs/{id}/cancel',
      streamRunEvents: 'get /v1/runs/{id}/events',
      answerClarify: 'post /v1/runs/{id}/clarify/{requestId}',
      getRunFile: 'get /v1/runs/{id}/files/{path}',
    });
  });

  it('names the file path parameter {path}, which reaches the file with its slashes as they are or encoded', async () => {
    const { app, config } = await build();
    const spec = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, Record<string, OpenApiOperation>>;
    }>();
    expect(Object.keys(spec.paths).filter((path) => path.includes('{*}'))).toEqual([]);
    const download = spec.paths['/v1/runs/{id}/files/{path}']?.get;
    expect(download?.parameters?.map(({ name, in: where, required }) => ({ name, where, required }))).toEqual(
      [
        { name: 'id', where: 'path', required: true },
        { name: 'path', where: 'path', required: true },
      ],
    );

    const id = await submit(app);
    await mkdir(join(config.workspaceRoot, id, 'src'), { recursive: true });
    await writeFile(join(config.workspaceRoot, id, 'src', 'a.txt'), 'hello\n');
    for (const path of ['src/a.txt', 'src%2Fa.txt']) {
      const file = await app.inject({ method: 'GET', url: `/v1/runs/${id}/files/${path}`, headers: ACME });
      expect(file.statusCode, path).toBe(200);
      expect(file.body).toBe('hello\n');
    }
  });
});
