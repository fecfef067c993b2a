import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../src/routes/console/index.js';
import { build } from './helper.js';

const INDEX =
  '<!doctype html><title>console</title><script type="module" src="/console/assets/app-1a2b3c.js"></script>';
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-console-'));
  await mkdir(join(dir, 'assets'));
  await writeFile(join(dir, 'index.html'), INDEX);
  await writeFile(join(dir, 'assets', 'app-1a2b3c.js'), 'console.log(1);');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the console at /console/', () => {
  it('redirects / there, and serves index.html for every page path, uncached, without credentials', async () => {
    const { app } = await build({ env: { TETHER_CONSOLE_DIR: dir } });
    const root = await app.inject({ url: '/' });
    expect(root.statusCode).toBe(302);
    expect(root.headers.location).toBe('/console/');
    for (const url of ['/console/', '/console', '/console/runs/run_01m8mk437dk0redcd4hsezf61x']) {
      const page = await app.inject({ url });
      expect(page.statusCode, url).toBe(200);
      expect(page.body).toBe(INDEX);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['cache-control']).toBe('no-cache');
      expect(page.headers['content-security-policy']).toBe(CONSOLE_CSP);
    }
  });

  it('caches hashed assets as immutable, and answers 404 for an asset that does not exist', async () => {
    const { app } = await build({ env: { TETHER_CONSOLE_DIR: dir } });
    const asset = await app.inject({ url: '/console/assets/app-1a2b3c.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.body).toBe('console.log(1);');
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(asset.headers['content-security-policy']).toBe(CONSOLE_CSP);
    const missing = await app.inject({ url: '/console/assets/app-000000.js' });
    expect(missing.statusCode).toBe(404);
    expect(missing.body).not.toContain('<title>console</title>');
  });

  it('sends a policy that allows no inline script and connections to this origin only', () => {
    const directives = Object.fromEntries(
      CONSOLE_CSP.split('; ').map((part) => [part.split(' ')[0], part.split(' ').slice(1)]),
    );
    expect(directives['script-src']).toEqual(["'self'"]);
    expect(directives['connect-src']).toEqual(["'self'"]);
    expect(directives['default-src']).toEqual(["'none'"]);
  });

  it('still starts without a built console: /console/ says how to build it, the API answers', async () => {
    const { app } = await build({ env: { TETHER_CONSOLE_DIR: join(dir, 'missing') } });
    for (const url of ['/console/', '/console/runs/run_x']) {
      const page = await app.inject({ url });
      expect(page.statusCode).toBe(404);
      expect(page.body).toContain('pnpm build');
    }
    expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/runs' })).statusCode).toBe(401);
  });

  it('leaves the console out of the OpenAPI document', async () => {
    const { app } = await build({ env: { TETHER_CONSOLE_DIR: dir } });
    const paths = Object.keys((await app.inject({ url: '/openapi.json' })).json().paths);
    expect(paths.filter((path) => path.startsWith('/console') || path === '/')).toEqual([]);
    expect(paths).toContain('/v1/runs');
  });
});
