/**
 * A new user's first hour, as one walk (issue 31): a fresh clone of this checkout, `pnpm install`,
 * `pnpm start` with no variable set, the console's scripted example, its question answered a minute
 * later, `pnpm tether webhooks add` to a receiver on this host, which the run's end then reaches,
 * and Ctrl-C. What each step prints or shows is what a person would see; nothing is configured
 * beside it.
 */
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Run } from '@tether/protocol';
import { freePort, killAllSpawned, spawnProgram, type TestProcess } from '@tether/testing';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { CHROMIUM_FLAGS, CHROMIUM_PATH } from './chromium.mjs';

const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url));
/** How long the person takes to answer the question: past the 20 s questions used to wait. */
const ANSWER_AFTER_MS = 60_000;

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  await killAllSpawned();
});

/** The checkout's files as a clone of it would have them (committed or not, never what git ignores). */
async function cloneOf(checkout: string, into: string): Promise<void> {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: checkout,
    encoding: 'utf8',
  });
  for (const path of listed.split('\0')) {
    // A tracked file deleted in the working tree is not in a clone of it either.
    if (path === '' || !existsSync(join(checkout, path))) continue;
    await mkdir(dirname(join(into, path)), { recursive: true });
    await copyFile(join(checkout, path), join(into, path));
  }
}

/** `pnpm <args>` in the clone, as typed at a terminal with nothing set but PATH and HOME; its exit. */
async function pnpm(cwd: string, args: string[]): Promise<TestProcess> {
  const run = spawnProgram('pnpm', args, {}, { cwd, name: `pnpm ${args.join(' ')}` });
  const exited = await run.exited;
  expect(exited, run.output()).toEqual({ code: 0, signal: null });
  return run;
}

interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on a loopback port: each POST answered 204 and kept. */
async function receiver(): Promise<{ url: string; delivered: Delivery[] }> {
  const delivered: Delivery[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      delivered.push({ headers: request.headers, body });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/hook`, delivered };
}

/** Is a delivery signed with `secret` (Standard Webhooks: HMAC-SHA256 over `<id>.<timestamp>.<body>`)? */
function signedWith(secret: string, { headers, body }: Delivery): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const digest = createHmac('sha256', key)
    .update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`)
    .digest('base64');
  return String(headers['webhook-signature']).split(' ').includes(`v1,${digest}`);
}

describe("a new user's first hour", () => {
  it('a fresh clone, pnpm start, the console example answered after a minute, tether webhooks add: no variable set', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-first-hour-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const clone = join(dir, 'tether');
    await cloneOf(CHECKOUT, clone);

    // The README's first line. Offline: the packages come from this machine's pnpm store.
    await pnpm(clone, ['install', '--offline', '--frozen-lockfile']);
    await pnpm(clone, ['build']);
    const [port, redisPort] = [await freePort(), await freePort()];
    // Ports named (other tests run beside this one), nothing else: its own Redis, its own secrets key.
    const start = spawnProgram(
      'pnpm',
      ['start', '--port', String(port), '--redis-port', String(redisPort)],
      {},
      {
        cwd: clone,
        // As at a terminal: Ctrl-C reaches pnpm and the start script, the process group in front.
        detached: true,
      },
    );
    const interrupt = () => {
      if (start.child.pid !== undefined && start.child.exitCode === null)
        process.kill(-start.child.pid, 'SIGINT');
    };
    cleanups.push(async () => {
      interrupt();
      await start.exited;
    });
    const banner = (await start.waitFor(/Tether is up[\s\S]*stop: Ctrl-C/, 120_000))[0];
    const api = `http://127.0.0.1:${port}`;
    expect(banner).toContain(`${api}/console/`);
    expect(banner).toContain('No model is configured');
    const stackFile = join(clone, '.tether', 'stack.json');
    const { consoleUrl, pids } = JSON.parse(readFileSync(stackFile, 'utf8')) as {
      consoleUrl: string;
      pids: { api: number; redis: number; workers: Record<string, number> };
    };

    // The console, as the banner says: no key to type, no model, and the scripted example.
    const profile = await mkdtemp(join(tmpdir(), 'tether-first-hour-chromium-'));
    const browser: BrowserContext = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      args: CHROMIUM_FLAGS,
      headless: true,
    });
    cleanups.push(async () => {
      await browser.close();
      await rm(profile, { recursive: true, force: true });
    });
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(consoleUrl);
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    await page.getByRole('link', { name: 'New run' }).first().click();
    const notice = page.getByRole('complementary', { name: 'No model is configured on this server' });
    await notice.getByRole('button', { name: 'Try a scripted example' }).click();
    await page.getByRole('region', { name: 'The scripted example' }).waitFor();
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.waitForURL(/\/console\/runs\/run_/);
    const id = new URL(page.url()).pathname.split('/').pop() as string;
    const question = 'The greeting is fixed. Should I leave a note of the change in NOTES.md?';
    await page.getByText(question, { exact: true }).waitFor({ timeout: 60_000 });
    const asked = Date.now();
    const status = page.getByTestId('run-status');
    expect(await status.textContent()).toBe('Waiting for input');
    const waiting = (await (await fetch(`${api}/v1/runs/${id}`)).json()) as Run;
    // Ten minutes by default, not twenty seconds.
    const waits = Date.parse(waiting.pendingClarify?.expiresAt ?? '') - asked;
    expect(waits).toBeGreaterThan(9 * 60_000);
    expect(waits).toBeLessThanOrEqual(10 * 60_000);

    // Meanwhile, in another terminal: a webhook to this host, plain http, with nothing set for it.
    const hooks = await receiver();
    const added = await pnpm(clone, ['tether', 'webhooks', 'add', hooks.url]);
    expect(added.output()).toContain(`Added webhook`);
    const secret = added.output().match(/Signing secret \(shown only now\): (whsec_\S+)/)?.[1] as string;
    expect(secret).toBeDefined();

    // A minute later, the question still waits, and the answer is taken.
    await new Promise((resolve) => setTimeout(resolve, asked + ANSWER_AFTER_MS - Date.now()));
    expect(await page.getByTestId('countdown').textContent()).toMatch(/^[89]:\d\d$/);
    await page.getByRole('button', { name: 'No, that is all', exact: true }).click();
    await page.getByText('Answered: No, that is all').waitFor();
    await expect.poll(() => status.textContent(), { timeout: 60_000 }).toBe('Completed');
    const greet = await (await fetch(`${api}/v1/runs/${id}/files/greet.js`)).text();
    expect(greet).toMatch(/\n {4}return `Hello, \$\{name\}!`;\n/);

    // The run's end reached the receiver, signed with the secret the CLI printed.
    await expect
      .poll(() => hooks.delivered.find((delivery) => delivery.body.includes(`"type":"run.completed"`)), {
        timeout: 30_000,
      })
      .toBeDefined();
    const completed = hooks.delivered.find((delivery) => delivery.body.includes(`"type":"run.completed"`));
    expect(JSON.parse(completed?.body ?? '{}')).toMatchObject({ type: 'run.completed', runId: id });
    expect(signedWith(secret, completed as Delivery)).toBe(true);
    expect(pageErrors).toEqual([]);

    // Ctrl-C: the whole stack stops, and its stack file goes.
    interrupt();
    await start.exited;
    expect(start.output()).toMatch(/stopping…/);
    expect(existsSync(stackFile)).toBe(false);
    for (const pid of [pids.api, pids.redis, ...Object.values(pids.workers)]) {
      expect(() => process.kill(pid, 0), String(pid)).toThrow();
    }
  }, 300_000);
});
