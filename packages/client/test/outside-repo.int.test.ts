/**
 * The CLI and the SDK used from outside the repository: `pnpm tether` typed in
 * another directory reads its paths there, and the package packed with
 * `npm pack` installs into an empty folder with plain npm, where `npx tether`
 * works against a real API and the SDK imports, types included.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { testRedisUrl, uniquePrefix } from '@tether/testing';
import { startApiProcess } from '@tether/testing/scripts';
import { afterEach, describe, expect, it } from 'vitest';
import { TetherClient } from '../src/index.js';
import { FakeApi } from '../src/testing/fake-api.js';

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `tether-${name}-`));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('pnpm tether typed in another directory', () => {
  it('reads --files and --replay there, not in the repository root', async () => {
    const api = new FakeApi();
    api.keys.set('key-a', 'tenant-a');
    await api.start();
    cleanups.push(() => api.close());
    api.onSubmit = (run) => api.append(run.run.id, 'run.completed', { output: 'done' });
    const caller = await tempDir('caller');
    await mkdir(join(caller, 'project'));
    await writeFile(join(caller, 'project', 'notes.txt'), 'from the caller\n');
    await writeFile(join(caller, 'script.json'), JSON.stringify([{ content: 'done' }]));

    const args = [
      '--dir',
      ROOT,
      'tether',
      'run',
      'x',
      '--replay',
      'script.json',
      '--files',
      'project',
      '--json',
    ];
    const env = { ...process.env, TETHER_URL: api.baseUrl, TETHER_API_KEY: 'key-a', NO_COLOR: '1' };
    await execFileAsync('pnpm', args, { cwd: caller, env });

    const submit = api.requests.find((r) => r.method === 'POST' && r.path === '/v1/runs');
    expect(submit?.body).toEqual({
      input: 'x',
      model: { provider: 'replay', script: [{ content: 'done' }] },
      files: { 'notes.txt': 'from the caller\n' },
    });
  });
});

describe('the package from npm pack, installed with plain npm into an empty folder', () => {
  it('runs npx tether --version and npx tether runs --url against a real API, and its SDK imports with its types', async () => {
    const KEY = 'sk_test_install';
    const workspaceRoot = await tempDir('install-ws');
    // An API alone (no worker: a run stays queued, for the list to show), started while npm works.
    const starting = startApiProcess({
      redisUrl: testRedisUrl(),
      env: {
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        TETHER_QUEUE_PREFIX: uniquePrefix('install'),
        TETHER_API_KEYS: `acme:${KEY}`,
        TETHER_ALLOW_REPLAY: '1',
        TETHER_WORKSPACE_ROOT: workspaceRoot,
      },
      // It starts beside npm, which takes the CPU a while.
      readyTimeoutMs: 30_000,
    });
    // Awaited once npm is done; a failure to start meanwhile is not an unhandled rejection.
    starting.catch(() => undefined);
    cleanups.push(async () => {
      await (await starting.catch(() => undefined))?.stop('SIGTERM', 3_000);
    });

    const dir = await tempDir('install');
    // The tarball of dist/ as `pnpm build` left it before the integration tests (without
    // --ignore-scripts, prepack would build it again under the feet of the other tests).
    await execFileAsync('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], { cwd: PACKAGE });
    const { name, version } = JSON.parse(await readFile(join(PACKAGE, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
    };
    const tarball = join(dir, `${name.replace('@', '').replace('/', '-')}-${version}.tgz`);
    const app = join(dir, 'app');
    await mkdir(app);
    await writeFile(
      join(app, 'package.json'),
      JSON.stringify({ name: 'app', private: true, type: 'module' }),
    );
    const env: NodeJS.ProcessEnv = { NO_COLOR: '1' };
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('TETHER_')) env[key] = value;
    const install = (mode: string) =>
      execFileAsync(
        'npm',
        ['install', '--no-audit', '--no-fund', '--no-package-lock', '--ignore-scripts', mode, tarball],
        { cwd: app, env },
      );
    // The dependencies from npm's cache when it holds them all, else from the registry.
    await install('--offline').catch(() => install('--prefer-offline'));

    const api = await starting;
    const client = new TetherClient({ baseUrl: api.url, apiKey: KEY });
    const { id } = await client.submit({
      input: 'listed',
      model: { provider: 'replay', script: [{ content: 'x' }] },
    });
    // The SDK typechecked against its own declarations alone (no workspace package), and imported by Node.
    await writeFile(
      join(app, 'check.ts'),
      [
        "import { TetherClient, type Run } from '@tether/client';",
        `const client = new TetherClient({ baseUrl: '${api.url}', apiKey: '${KEY}' });`,
        `const run: Run = await client.get('${id}');`,
        // Fails unless the types are there: lost to an unresolved import, `run` would be any.
        '// @ts-expect-error: a status is one of the run statuses, not a number',
        'const wrong: number = run.status;',
        'console.log(wrong);',
      ].join('\n'),
    );
    await writeFile(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2023',
          lib: ['ES2023', 'DOM'],
          types: [],
          strict: true,
          skipLibCheck: true,
          noEmit: true,
        },
        files: ['check.ts'],
      }),
    );
    const script = `import { TetherClient } from '@tether/client';
      const run = await new TetherClient({ baseUrl: '${api.url}', apiKey: '${KEY}' }).get('${id}');
      console.log(run.status);`;
    // `--no`: never fetch some other package called tether should the installed bin be missing.
    const npx = (args: string[]) =>
      execFileAsync('npx', ['--no', '--', 'tether', ...args], { cwd: app, env });
    const [versionOut, runsOut, typecheck, imported] = await Promise.all([
      npx(['--version']),
      npx(['runs', '--url', api.url, '--api-key', KEY]),
      execFileAsync(process.execPath, [TSC, '-p', '.'], { cwd: app, env }).catch(
        (error: { stdout?: string }) => ({ stdout: `the SDK does not typecheck: ${error.stdout ?? error}` }),
      ),
      execFileAsync(process.execPath, ['--input-type=module', '-e', script], { cwd: app, env }),
    ]);
    expect(versionOut.stdout).toBe(`${version}\n`);
    expect(runsOut.stdout).toMatch(new RegExp(`^${id}\\s+queued\\s`, 'm'));
    expect(typecheck.stdout).toBe('');
    expect(imported.stdout).toBe('queued\n');
    // npm is slow on a loaded machine: 20 s here at a load of 7 on two cores, 54 s at 21.
  }, 120_000);
});
