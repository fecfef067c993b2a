/**
 * The console in a real browser: Debian's Chromium driven by playwright-core,
 * against a real stack (Redis, an API process serving the built console, a
 * worker process) running replay runs. Needs `pnpm build` first (the API's
 * dist/ and the console's dist/).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AxeBuilder } from '@axe-core/playwright';
import { TetherClient } from '@tether/client';
import type { ReplayScript } from '@tether/protocol';
import { createKeys, createRedisConnection, type RedisClient } from '@tether/store/redis';
import { RunStore } from '@tether/store/runs';
import { killAllSpawned, testRedisUrl, uniquePrefix } from '@tether/testing';
import { type Stack, startApiProcess, startStack } from '@tether/testing/scripts';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EMPTY_TIMELINE, foldEvents } from '../src/timeline.js';
import { CHROMIUM_FLAGS, CHROMIUM_PATH } from './chromium.mjs';
import { appendLongRun, LONG_RUN_EVENTS, longRunEvents } from './long-run.mjs';

const API_KEY = 'sk_console_0123456789';
/** Another tenant's key: its console must see none of acme's runs. */
const OTHER_TENANT_KEY = 'sk_console_other_987654';

const PREFIX = uniquePrefix('console');
let stack: Stack;
let base: string;
let workspaceRoot: string;
let profile: string;
let browser: BrowserContext;
let client: TetherClient;
let redis: RedisClient | undefined;
/** Uncaught errors of the console's pages: none are expected. */
const pageErrors: string[] = [];

/** What every process of the stack is given. */
const sharedEnv = () => ({
  TETHER_QUEUE_PREFIX: PREFIX,
  TETHER_WORKSPACE_ROOT: workspaceRoot,
  TETHER_ALLOW_REPLAY: '1',
  TETHER_SANDBOX: 'none',
  // Children of children: the crew tree's test has a child delegate too.
  TETHER_CREW_MAX_DEPTH: '2',
  LOG_LEVEL: 'info',
});
/** The API's own. */
const API_ENV = {
  HOST: '127.0.0.1',
  TETHER_API_KEYS: `acme:${API_KEY},other:${OTHER_TENANT_KEY}`,
  TETHER_SSE_HEARTBEAT_MS: '1000',
};

/** With TETHER_SCREENSHOTS=1 the tests save the pages docs/console.md shows, as docs/images/console-<name>.png. */
const SCREENSHOTS =
  process.env.TETHER_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../../../docs/images/', import.meta.url))
    : undefined;

/** The page as it is, light (`console-<name>.png`) and dark (`console-<name>-dark.png`); the light scheme is restored. */
async function screenshot(page: Page, name: string): Promise<void> {
  if (SCREENSHOTS === undefined) return;
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.emulateMedia({ colorScheme: 'light' });
  await page.screenshot({ path: join(SCREENSHOTS, `console-${name}.png`) });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.screenshot({ path: join(SCREENSHOTS, `console-${name}-dark.png`) });
  await page.emulateMedia({ colorScheme: 'light' });
}

beforeAll(async () => {
  workspaceRoot = await mkdtemp(join(tmpdir(), 'tether-console-ws-'));
  profile = await mkdtemp(join(tmpdir(), 'tether-console-chromium-'));
  // The stack and the browser start side by side: each takes seconds.
  const [started, launched] = await Promise.allSettled([
    startStack({
      redis: testRedisUrl(),
      env: sharedEnv(),
      apiEnv: API_ENV,
      // Above the 30 s default: the stack starts beside Chromium, and an API alone took 15 s to listen
      // on this 2-core machine under a load of 19.
      readyTimeoutMs: 60_000,
    }),
    // A persistent context is Playwright's way to a fresh --user-data-dir of our own.
    chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      args: CHROMIUM_FLAGS,
      headless: true,
    }),
  ]);
  // Whichever started is kept, so that afterAll stops it when the other failed.
  if (started.status === 'fulfilled') stack = started.value;
  if (launched.status === 'fulfilled') browser = launched.value;
  if (started.status === 'rejected') throw started.reason;
  if (launched.status === 'rejected') throw launched.reason;
  base = stack.urls[0] as string;
  client = new TetherClient({ baseUrl: base, apiKey: API_KEY });
}, 90_000);

afterAll(async () => {
  redis?.disconnect();
  await browser?.close();
  await stack?.stop();
  await killAllSpawned();
  await rm(workspaceRoot, { recursive: true, force: true });
  await rm(profile, { recursive: true, force: true });
});

afterEach(() => {
  expect(pageErrors.splice(0)).toEqual([]);
});

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

async function submit(script: ReplayScript, input = 'a console test'): Promise<string> {
  const { id } = await client.submit({ input, model: { provider: 'replay', script } });
  return id;
}

/** A new tab at `path`, signed in through the form (sessionStorage is per tab). */
async function openSignedIn(path: string): Promise<Page> {
  const page = await browser.newPage();
  page.on('pageerror', (error) => pageErrors.push(`${path}: ${error.message}`));
  await page.goto(`${base}${path}`);
  await page.getByLabel('API key').fill(API_KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  return page;
}

async function statusIs(page: Page, text: string, timeout = 15_000): Promise<void> {
  await page
    .getByTestId('run-status')
    .filter({ hasText: new RegExp(`^${text}$`) })
    .waitFor({ timeout });
}

/** Violations axe-core rates serious or critical, as `rule: target` lines. */
async function seriousViolations(page: Page): Promise<string[]> {
  // Legacy mode runs axe in the page itself, without the blank page it otherwise opens per check.
  const { violations } = await new AxeBuilder({ page }).setLegacyMode(true).analyze();
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .flatMap((violation) => violation.nodes.map((node) => `${violation.id}: ${node.target.join(' ')}`));
}

/** Resolves with the request id of the first question `id` asks, read from its event stream. */
async function questionOf(id: string): Promise<string> {
  for await (const event of client.stream(id)) {
    if (event.type === 'clarify.requested') return event.data.requestId;
  }
  throw new Error(`run ${id} ended without asking`);
}

/** The run's events appended to its log directly (the test's RunStore on the stack's Redis). */
function runStore(): RunStore {
  redis ??= createRedisConnection({
    url: stack.redisUrl,
    name: 'console-test',
    mode: 'wait',
    onError: () => {},
  });
  return new RunStore({ redis, keys: createKeys(PREFIX) });
}

const CLARIFY_COLOUR: ReplayScript = [
  { toolCalls: [call('clarify', { question: 'Which colour?', choices: ['red', 'blue'] })] },
  { content: 'done' },
];

describe('the console in Chromium', () => {
  it('signs in (refusing a wrong key), lists runs live with status as text, filters and searches them', async () => {
    const done = await submit([{ content: 'finished' }], 'List the files\nthen stop');
    await client.wait(done);
    const page = await browser.newPage();
    page.on('pageerror', (error) => pageErrors.push(`/: ${error.message}`));
    const csp: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) csp.push(message.text());
    });
    await page.goto(`${base}/`);
    expect(new URL(page.url()).pathname).toBe('/console/');
    await page.getByLabel('API key').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('API key').fill('sk_wrong_key_000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The API refused that key.' }).waitFor();
    await page.getByLabel('API key').fill(API_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: done });
    await row.waitFor();
    const cells = row.getByRole('cell');
    expect(await cells.nth(1).textContent()).toBe('List the files');
    // The status is a badge: its icon is hidden from assistive technology, its label is the cell's name.
    await row.getByRole('cell', { name: 'Completed', exact: true }).waitFor();
    expect(await cells.nth(3).textContent()).toMatch(/^\d+(\.\d)? (ms|s)$/);
    expect(await cells.nth(4).textContent()).toBe('replay');
    expect(await cells.nth(5).textContent()).toMatch(/^\d+(\.\d+k)?$/);
    // A replay script has no prices: no cost.
    expect(await cells.nth(6).textContent()).toBe('–');
    expect(await cells.nth(7).textContent()).toMatch(/^\d+ s ago$/);
    expect(await cells.nth(8).textContent()).toBe('1');
    // The id is whole in the DOM (cut only on screen), with a button that copies it.
    expect(await cells.nth(0).getByRole('link').textContent()).toBe(done);
    await cells
      .nth(0)
      .getByRole('button', { name: `Copy ${done}` })
      .waitFor();
    // The key is in this tab's sessionStorage, and in no URL.
    expect(await page.evaluate(() => sessionStorage.getItem('tether.apiKey'))).toBe(API_KEY);
    expect(page.url()).not.toContain(API_KEY);

    // Live: a run submitted now appears without a reload.
    const waiting = await submit(CLARIFY_COLOUR);
    const newRow = page.getByRole('row').filter({ hasText: waiting });
    await newRow.getByRole('cell', { name: 'Waiting for input' }).waitFor({ timeout: 10_000 });
    expect(await page.getByRole('row').nth(1).textContent()).toContain(waiting);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'runs');

    await page.getByLabel('Status').selectOption('completed');
    await newRow.waitFor({ state: 'detached' });
    await row.waitFor();
    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Search by id').fill(waiting);
    await row.waitFor({ state: 'detached' });
    await newRow.waitFor();
    await client.cancel(waiting);
    expect(csp).toEqual([]);
    await page.close();
  });

  it('shows a run live, and answers its question by clicking a choice; a reloaded deep link shows each event once', async () => {
    const id = await submit(CLARIFY_COLOUR);
    const page = await openSignedIn('/console/');
    await page.getByRole('link', { name: id }).click();
    expect(new URL(page.url()).pathname).toBe(`/console/runs/${id}`);
    await page.getByText('Which colour?', { exact: true }).waitFor();
    await statusIs(page, 'Waiting for input');
    expect(await page.getByTestId('countdown').textContent()).toMatch(/^\d+:\d\d$/);
    await page
      .getByText(/Tool clarify/)
      .first()
      .waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'question');

    await page.getByRole('button', { name: 'blue', exact: true }).click();
    await statusIs(page, 'Completed');
    await page.getByText('Which colour?', { exact: true }).waitFor({ state: 'detached' });
    await page.getByText('Answered: blue').waitFor();
    expect(await page.locator('pre.output').textContent()).toBe('done');

    await page.reload();
    await statusIs(page, 'Completed');
    await page.getByText('Answered: blue').waitFor();
    expect(
      await page
        .locator('.event-status')
        .filter({ hasText: /Completed$/ })
        .count(),
    ).toBe(1);
    expect(await page.locator('.event-question').count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('answers by typing, and a second page on the run drops its prompt when the first answers', async () => {
    const id = await submit([
      { toolCalls: [call('clarify', { question: 'Name the file', choices: [] })] },
      { content: 'named' },
    ]);
    const first = await openSignedIn(`/console/runs/${id}`);
    const second = await openSignedIn(`/console/runs/${id}`);
    for (const page of [first, second]) await page.getByText('Name the file', { exact: true }).waitFor();
    await first.getByLabel('Your answer').fill('notes.md');
    await first.getByRole('button', { name: 'Send', exact: true }).click();
    for (const page of [first, second]) {
      await statusIs(page, 'Completed');
      await page.getByLabel('Your answer').waitFor({ state: 'detached' });
      await page.getByText('Answered: notes.md').waitFor();
    }
    await first.close();
    await second.close();
  });

  it('cancels a running bash step after confirming', async () => {
    const id = await submit([
      { toolCalls: [call('bash', { command: 'sleep 30; echo late > late.txt' })] },
      { content: 'never' },
    ]);
    const page = await openSignedIn(`/console/runs/${id}`);
    const events = page.getByRole('region', { name: 'Timeline events' });
    const bashRow = events.locator('.event-tool').filter({ hasText: 'Tool bash' });
    await bashRow.getByText('Running', { exact: true }).waitFor({ timeout: 15_000 });
    await statusIs(page, 'Running');
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.getByRole('button', { name: 'Keep it running' }).click();
    expect((await client.get(id)).status).toBe('running');
    await page.getByRole('button', { name: 'Cancel run' }).click();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Yes, cancel the run' }).click();
    await statusIs(page, 'Cancelled', 10_000);
    await page.getByRole('button', { name: 'Cancel run' }).waitFor({ state: 'detached' });
    expect((await client.get(id)).status).toBe('cancelled');
    // The call cut off says so, live and after a reload, in the events and in the trace.
    const trace = page.getByRole('region', { name: 'Trace' });
    for (const when of ['live', 'reloaded']) {
      if (when === 'reloaded') await page.reload();
      await bashRow.getByText('Stopped by cancel', { exact: true }).waitFor();
      expect(await bashRow.getByText('Running', { exact: true }).count()).toBe(0);
      await trace
        .getByRole('button', { name: /^bash sleep 30; echo late > late\.txt .*, Stopped by cancel$/ })
        .waitFor();
    }
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'cancelled');
    await page.close();
  });

  it('draws a 5,000-event run as a virtualised list that follows its tail, reachable by keyboard', async () => {
    // The question waits long enough for a loaded machine to append and draw the 5,000 events.
    const { id } = await client.submit({
      input: 'a long run',
      model: {
        provider: 'replay',
        script: [
          { toolCalls: [call('clarify', { question: 'Carry on?', choices: ['yes'] })] },
          { content: 'carried on' },
        ],
      },
      clarify: { timeoutMs: 600_000 },
    });
    const requestId = await questionOf(id);
    await appendLongRun(runStore(), id);
    const page = await openSignedIn(`/console/runs/${id}`);
    const rows = page.locator('li.timeline-row');
    // The view starts at the bottom: the last of the run's steps is drawn.
    const lastMessage = longRunEvents().findLast((event) => event.type === 'message');
    if (lastMessage?.type !== 'message') throw new Error('the long run has no message');
    await page.getByText(lastMessage.data.content, { exact: true }).waitFor({ timeout: 15_000 });
    const total = Number(await rows.first().getAttribute('aria-setsize'));
    // Each step is a text row and a tool row (its result folded into the call), plus todos and usage.
    expect(total).toBeGreaterThan((2 * LONG_RUN_EVENTS) / 3);
    const drawn = await rows.count();
    expect(drawn).toBeGreaterThan(0);
    expect(drawn).toBeLessThan(100);
    expect(await rows.last().getAttribute('aria-posinset')).toBe(String(total));
    // The trace of its 1,600 steps draws only the rows in view too, its last step at the bottom.
    const traceRows = page.locator('li.trace-row');
    expect(await traceRows.count()).toBeLessThan(100);
    await traceRows.getByRole('button', { name: /^read_file src\/module-1634\.ts / }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    // Scrolled to the bottom, the view follows rows that arrive.
    await client.answer(id, requestId, 'yes');
    const completed = page.locator('.event-status').filter({ hasText: /Completed$/ });
    await completed.waitFor({ timeout: 15_000 });
    await statusIs(page, 'Completed');
    const box = page.getByRole('region', { name: 'Timeline events' });
    const inView = async (row: typeof completed) => {
      const [outer, inner] = await Promise.all([box.boundingBox(), row.boundingBox()]);
      return (
        outer !== null &&
        inner !== null &&
        inner.y >= outer.y &&
        inner.y + inner.height <= outer.y + outer.height + 1
      );
    };
    await expect.poll(() => inView(completed)).toBe(true);
    await screenshot(page, 'long-run');

    // The keyboard alone scrolls it: Home shows the run's first row (and drops the last), End the last.
    await box.focus();
    await page.keyboard.press('Home');
    await page.locator('li.timeline-row[aria-posinset="1"]').getByText('Queued').waitFor();
    await completed.waitFor({ state: 'detached' });
    expect(await rows.count()).toBeLessThan(100);
    await page.keyboard.press('End');
    await completed.waitFor();
    await expect.poll(() => inView(completed)).toBe(true);
    await page.close();
  });

  it('shows a patch call as a unified diff, its lines marked by sign and by label', async () => {
    const id = await submit([
      { toolCalls: [call('write_file', { path: 'notes.md', content: 'alpha\nbeta\ngamma\n' })] },
      { toolCalls: [call('patch', { path: 'notes.md', old_string: 'beta', new_string: 'BETA\nbeta two' })] },
      { toolCalls: [call('patch', { path: 'notes.md', old_string: 'omega', new_string: 'psi' })] },
      { content: 'patched' },
    ]);
    await client.wait(id);
    const page = await openSignedIn(`/console/runs/${id}`);
    await statusIs(page, 'Completed');
    // The applied patch: the diff of its result, with its hunk's line numbers.
    const applied = page.getByRole('figure', { name: 'Change to notes.md', exact: true });
    await applied.waitFor();
    expect(await applied.locator('.diff-hunk').allTextContents()).toEqual(['@@ -1,3 +1,4 @@\n']);
    expect(await applied.locator('.diff-remove').allTextContents()).toEqual(['Removed: -beta\n']);
    expect(await applied.locator('.diff-add').allTextContents()).toEqual([
      'Added: +BETA\n',
      'Added: +beta two\n',
    ]);
    expect(await applied.locator('.diff-context').allTextContents()).toEqual([' alpha\n', ' gamma\n']);
    // The refused one has no diff in its result: it is drawn from the call's arguments.
    const refused = page.getByRole('figure', { name: /^Change to notes\.md \(from the call/ });
    expect(await refused.locator('.diff-remove').allTextContents()).toEqual(['Removed: -omega\n']);
    expect(await refused.locator('.diff-add').allTextContents()).toEqual(['Added: +psi\n']);
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('shows every event once when the API restarts in the middle of the stream', async () => {
    const steps = 6;
    const id = await submit([
      ...Array.from({ length: steps }, (_, step) => ({
        toolCalls: [call('bash', { command: `sleep 1; echo step-${step}` })],
      })),
      { content: 'all steps done' },
    ]);
    const page = await openSignedIn(`/console/runs/${id}`);
    await page
      .getByText(/Tool bash/)
      .first()
      .waitFor({ timeout: 15_000 });
    const api = stack.apis[0];
    if (!api) throw new Error('the stack has no API');
    await api.stop('SIGTERM');
    expect((await client.get(id).catch(() => undefined))?.status).toBeUndefined();
    // The same port, so that the page's stream reconnects to it (with Last-Event-ID).
    stack.apis[0] = await startApiProcess({
      redisUrl: stack.redisUrl,
      port: api.port,
      env: { ...sharedEnv(), ...API_ENV },
      readyTimeoutMs: 60_000,
    });
    await statusIs(page, 'Completed', 60_000);
    await page.getByText('all steps done').first().waitFor();
    const logged = await client.events(id, { limit: 1_000 });
    const toolCalls = logged.data.filter((event) => event.type === 'tool.call').length;
    expect(toolCalls).toBe(steps);
    // The whole list, drawn or not, has one row per item of the logged events folded once.
    const expected = foldEvents(EMPTY_TIMELINE, logged.data).items.length;
    expect(await page.locator('li.timeline-row').first().getAttribute('aria-setsize')).toBe(String(expected));
    // A page tall enough to draw every row of this short run, so that each can be counted.
    await page.setViewportSize({ width: 1280, height: 2400 });
    await page.locator(`li.timeline-row[aria-posinset="1"]`).waitFor();
    expect(await page.locator('li.timeline-row').count()).toBe(expected);
    expect(await page.locator('.event-tool').count()).toBe(steps);
    for (let step = 0; step < steps; step++) {
      expect(await page.locator('.event-tool').nth(step).locator('details').textContent()).toContain(
        `step-${step}`,
      );
    }
    expect(await page.locator('.event-text').filter({ hasText: 'all steps done' }).count()).toBe(1);
    expect(
      await page
        .locator('.event-status')
        .filter({ hasText: /Started attempt 1$/ })
        .count(),
    ).toBe(1);
    expect(
      await page
        .locator('.event-status')
        .filter({ hasText: /Completed$/ })
        .count(),
    ).toBe(1);
    await page.close();
  });
});

/** A new tab at `path`, signed in with `key`. */
async function openSignedInAs(key: string, path: string): Promise<Page> {
  const page = await browser.newPage();
  page.on('pageerror', (error) => pageErrors.push(`${path}: ${error.message}`));
  await page.goto(`${base}${path}`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  return page;
}

/** What a download the page started holds, as text. */
async function downloaded(page: Page, start: () => Promise<void>): Promise<{ name: string; text: string }> {
  const [download] = await Promise.all([page.waitForEvent('download'), start()]);
  const stream = await download.createReadStream();
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return { name: download.suggestedFilename(), text: Buffer.concat(chunks).toString('latin1') };
}

describe("the console's Files tab and crew tree", () => {
  it('lists the workspace, shows a file, reloads its deep link, downloads without the key in a URL', async () => {
    const id = await submit([
      {
        toolCalls: [
          call('write_file', { path: 'notes/plan.md', content: '# Plan\n\n- first step\n' }),
          call('bash', {
            command: "printf 'GIF\\000\\001' > image.bin; head -c 600000 /dev/zero | tr '\\000' a > big.txt",
          }),
        ],
      },
      { content: 'wrote' },
    ]);
    await client.wait(id);
    const page = await openSignedIn(`/console/runs/${id}`);
    await statusIs(page, 'Completed');
    const tabs = page.getByRole('tablist', { name: 'Run views' });
    const timelineTab = tabs.getByRole('tab', { name: 'Timeline' });
    const filesTab = tabs.getByRole('tab', { name: 'Files' });
    expect(await timelineTab.getAttribute('aria-selected')).toBe('true');
    await page.getByRole('region', { name: 'Timeline events' }).waitFor();
    await filesTab.click();
    expect(new URL(page.url()).pathname).toBe(`/console/runs/${id}/files`);
    expect(await filesTab.getAttribute('aria-selected')).toBe('true');
    const panel = page.getByRole('tabpanel', { name: 'Files' });
    await panel.waitFor();
    // The top: the folder with its file count and size, then the files with theirs.
    const folderRow = panel.getByRole('row').filter({ has: page.getByRole('link', { name: 'notes/' }) });
    expect(await folderRow.getByRole('cell').nth(1).textContent()).toBe('1 file, 21 bytes');
    const bigRow = panel.getByRole('row').filter({ has: page.getByRole('link', { name: 'big.txt' }) });
    expect(await bigRow.getByRole('cell').nth(1).textContent()).toBe('586 KB');
    expect(await panel.getByRole('link', { name: 'plan.md' }).count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);

    // The keyboard: Left goes to the timeline (and its URL), Right back to the files.
    await filesTab.focus();
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => timelineTab.getAttribute('aria-selected')).toBe('true');
    expect(new URL(page.url()).pathname).toBe(`/console/runs/${id}`);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Timeline');
    await page.getByRole('region', { name: 'Timeline events' }).waitFor();
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => filesTab.getAttribute('aria-selected')).toBe('true');
    expect(await timelineTab.getAttribute('tabindex')).toBe('-1');

    // Into the folder, then the file: its text in a <pre>, on a deep link that survives a reload.
    await panel.getByRole('link', { name: 'notes/' }).click();
    await panel.getByRole('link', { name: 'plan.md' }).click();
    expect(new URL(page.url()).pathname).toBe(`/console/runs/${id}/files/notes/plan.md`);
    const content = page.getByRole('region', { name: 'Content of notes/plan.md' });
    expect(await content.locator('pre').textContent()).toBe('# Plan\n\n- first step\n');
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'files');
    await page.reload();
    expect(await content.locator('pre').textContent()).toBe('# Plan\n\n- first step\n');
    expect(await page.getByRole('tab', { name: 'Files' }).getAttribute('aria-selected')).toBe('true');

    // The download is a blob: URL of bytes fetched with the key in a header.
    const link = page.getByRole('link', { name: 'Download plan.md' });
    const href = (await link.getAttribute('href')) ?? '';
    expect(href).toMatch(/^blob:/);
    expect(href).not.toContain(API_KEY);
    expect(await downloaded(page, () => link.click())).toEqual({
      name: 'plan.md',
      text: '# Plan\n\n- first step\n',
    });

    // The breadcrumbs lead back; a binary file and a large one say so, and download all the same.
    await page.getByRole('navigation', { name: 'Folder' }).getByRole('link', { name: 'Workspace' }).click();
    await panel.getByRole('link', { name: 'image.bin' }).click();
    await page.getByText('This file is binary: it is not shown here.').waitFor();
    expect(
      await downloaded(page, () => page.getByRole('link', { name: 'Download image.bin' }).click()),
    ).toEqual({
      name: 'image.bin',
      text: 'GIF\u0000\u0001',
    });
    await page.goBack();
    await panel.getByRole('link', { name: 'big.txt' }).click();
    await page.getByText('This file is too large to show here (more than 512 KB).').waitFor();
    const big = await downloaded(page, () => page.getByRole('button', { name: 'Download big.txt' }).click());
    expect(big.name).toBe('big.txt');
    expect(big.text).toBe('a'.repeat(600_000));

    // A path the workspace does not hold says so, one leading out of it too (it is never asked for).
    await page.goto(`${base}/console/runs/${id}/files/notes/missing.md`);
    await page
      .getByRole('alert')
      .filter({ hasText: 'There is no file or folder notes/missing.md' })
      .waitFor();
    await page.goto(`${base}/console/runs/${id}/files/..%2F..%2Fetc%2Fpasswd`);
    await page
      .getByRole('alert')
      .filter({ hasText: 'There is no file or folder ../../etc/passwd' })
      .waitFor();
    await page.close();
  });

  it("follows the run's file changes live, reads again on Refresh, and says when the workspace is empty or the run gone", async () => {
    const id = await submit([
      { toolCalls: [call('write_file', { path: 'first.txt', content: 'one' })] },
      { toolCalls: [call('clarify', { question: 'Write the second?', choices: ['yes'] })] },
      { toolCalls: [call('write_file', { path: 'second.txt', content: 'two' })] },
      { toolCalls: [call('clarify', { question: 'Finish?', choices: ['yes'] })] },
      { content: 'both written' },
    ]);
    const requestId = await questionOf(id);
    const page = await openSignedIn(`/console/runs/${id}/files`);
    const panel = page.getByRole('tabpanel', { name: 'Files' });
    await panel.getByRole('link', { name: 'first.txt' }).waitFor();
    expect(await panel.getByRole('link', { name: 'second.txt' }).count()).toBe(0);
    // The write_file result on the stream reads the workspace again: no reload, no click.
    await client.answer(id, requestId, 'yes');
    await panel.getByRole('link', { name: 'second.txt' }).waitFor({ timeout: 15_000 });
    // A file written behind the run's back shows on "Refresh".
    await writeFile(join(workspaceRoot, id, 'outside.txt'), 'from the test');
    expect(await panel.getByRole('link', { name: 'outside.txt' }).count()).toBe(0);
    await panel.getByRole('button', { name: 'Refresh' }).click();
    await panel.getByRole('link', { name: 'outside.txt' }).waitFor();
    await client.cancel(id);
    await statusIs(page, 'Cancelled');

    // Deleted while its page is open: "Refresh" says the run and its files are gone.
    await client.delete(id);
    await panel.getByRole('button', { name: 'Refresh' }).click();
    await panel
      .getByRole('alert')
      .filter({ hasText: 'This run no longer exists (it was deleted, or its retention ended)' })
      .waitFor();
    await page.close();

    const empty = await submit([{ content: 'nothing written' }]);
    await client.wait(empty);
    const emptyPage = await openSignedIn(`/console/runs/${empty}/files`);
    await emptyPage.getByText('The workspace is empty: no files have been written to it yet.').waitFor();
    await emptyPage.close();
  });

  it("shows a crew parent's children as a live tree (children of children too), each linked, and a child's parent and root", async () => {
    const { id: parentId } = await client.submit({
      input: 'lead the crew',
      toolsets: ['base', 'planning', 'interaction', 'crew'],
      model: {
        provider: 'replay',
        script: [
          { toolCalls: [call('clarify', { question: 'Start the crew?', choices: ['go'] })] },
          {
            toolCalls: [
              call('delegate_parallel', {
                tasks: [{ goal: 'alpha: write alpha.txt' }, { goal: 'beta: report back' }],
              }),
            ],
          },
          { content: 'the crew is done' },
        ],
        children: [
          {
            match: 'alpha',
            script: [
              { toolCalls: [call('write_file', { path: 'alpha.txt', content: 'by alpha' })] },
              { toolCalls: [call('delegate_task', { goal: 'gamma: check alpha.txt' })] },
              { content: 'alpha done' },
            ],
            children: [{ script: [{ content: 'gamma done' }] }],
          },
          { script: [{ content: 'beta done' }] },
        ],
      },
    });
    const requestId = await questionOf(parentId);
    const page = await openSignedIn(`/console/runs/${parentId}`);
    await page.getByText('Start the crew?', { exact: true }).waitFor();
    const crew = page.getByRole('region', { name: 'Crew' });
    expect(await crew.count()).toBe(0);
    // The page follows the parent's child events: the tree appears, and its runs end, without a reload.
    await client.answer(parentId, requestId, 'go');
    await statusIs(page, 'Completed', 30_000);
    const alpha = crew
      .getByRole('listitem')
      .filter({ has: page.getByRole('link', { name: 'alpha: write alpha.txt' }) });
    const gammaLink = alpha.getByRole('list').getByRole('link', { name: 'gamma: check alpha.txt' });
    await gammaLink.waitFor({ timeout: 15_000 });
    await expect
      .poll(() => crew.locator('.badge-label').allTextContents())
      .toEqual(['Completed', 'Completed', 'Completed']);
    const parent = await client.get(parentId);
    const [alphaId, betaId] = (parent.children ?? []).map((child) => child.id);
    const alphaRun = await client.get(alphaId as string);
    const gammaId = alphaRun.children?.[0]?.id as string;
    expect(await crew.getByRole('link', { name: 'beta: report back' }).getAttribute('href')).toBe(
      `/console/runs/${betaId}`,
    );
    // The top list holds the parent's two children; gamma is nested under alpha.
    expect(await crew.locator(':scope > ul.crew > li').count()).toBe(2);
    expect(await alpha.locator('ul.crew > li').count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'crew');

    // Following a link opens the child's page, which names its parent and root, and shares their files.
    await gammaLink.click();
    expect(new URL(page.url()).pathname).toBe(`/console/runs/${gammaId}`);
    await statusIs(page, 'Completed');
    const facts = page.locator('dl.facts-row');
    expect(await facts.getByRole('link', { name: alphaId }).getAttribute('href')).toBe(
      `/console/runs/${alphaId}`,
    );
    expect(await facts.getByRole('link', { name: parentId }).getAttribute('href')).toBe(
      `/console/runs/${parentId}`,
    );
    await page.getByRole('tab', { name: 'Files' }).click();
    await page.getByRole('tabpanel', { name: 'Files' }).getByRole('link', { name: 'alpha.txt' }).waitFor();
    await facts.getByRole('link', { name: alphaId }).click();
    // The header's crumbs name the run now shown.
    await page
      .locator('.crumbs')
      .getByText(alphaId as string)
      .waitFor();
    await page
      .getByRole('region', { name: 'Crew' })
      .getByRole('link', { name: 'gamma: check alpha.txt' })
      .waitFor();
    await page.close();
  });

  it("shows another tenant's run as not found, on its page and its file's deep link", async () => {
    const id = await submit([
      { toolCalls: [call('write_file', { path: 'secret.txt', content: 'acme only' })] },
      { content: 'kept' },
    ]);
    await client.wait(id);
    const page = await openSignedInAs(OTHER_TENANT_KEY, `/console/runs/${id}/files/secret.txt`);
    await page.getByRole('heading', { name: 'Run not found' }).waitFor();
    expect(await page.getByText('acme only').count()).toBe(0);
    expect(await page.getByRole('tab').count()).toBe(0);
    await page.goto(`${base}/console/runs/${id}`);
    await page.getByRole('heading', { name: 'Run not found' }).waitFor();
    expect(await page.getByText('secret.txt').count()).toBe(0);
    await page.close();
  });
});

/** Presses Tab until the focused element is `target`'s, at most `limit` times; the elements passed on the way, by id or name. */
describe('the trace, the layout and every page', () => {
  it('draws a run as a trace: a question as a wait, each attempt a group, a crew under its call, a cancel', async () => {
    const { id } = await client.submit({
      input: 'trace the crew',
      toolsets: ['base', 'planning', 'interaction', 'crew'],
      model: {
        provider: 'replay',
        script: [
          { toolCalls: [call('clarify', { question: 'Ready to trace?', choices: ['yes'] })] },
          {
            toolCalls: [call('delegate_parallel', { tasks: [{ goal: 'quick one' }, { goal: 'slow one' }] })],
          },
          { content: 'never reached' },
        ],
        children: [
          { match: 'quick', script: [{ content: 'quick done' }] },
          {
            match: 'slow',
            script: [{ toolCalls: [call('bash', { command: 'sleep 30' })] }, { content: 'late' }],
          },
        ],
      },
    });
    const requestId = await questionOf(id);
    const page = await openSignedIn(`/console/runs/${id}`);
    const trace = page.getByRole('region', { name: 'Trace' });
    const detail = page.getByRole('complementary', { name: 'Step details' });
    await trace
      .getByRole('button', { name: /^Waiting for an answer “Ready to trace\?” .*, Waiting$/ })
      .waitFor();
    await client.answer(id, requestId, 'yes');
    // The answer ends the wait; the run resumes as a group of its own, and delegates.
    await trace
      .getByRole('button', { name: /^Waiting for an answer “Ready to trace\?” .*, Done waiting$/ })
      .waitFor();
    await trace.getByText('Attempt 1, resumed at step 1').waitFor({ timeout: 15_000 });
    await trace.getByRole('link', { name: 'Child: quick one' }).waitFor({ timeout: 15_000 });
    const slow = trace.getByRole('link', { name: 'Child: slow one' });
    await slow.waitFor();
    await trace
      .locator('.trace-child')
      .filter({ has: page.getByRole('link', { name: 'Child: quick one' }) })
      .getByText('completed')
      .waitFor({ timeout: 15_000 });
    await trace.getByRole('button', { name: /^Waiting for children .*, Waiting$/ }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'trace');

    // A step chosen in the trace is shown in full beside it.
    await trace.getByRole('button', { name: /^Waiting for an answer/ }).click();
    await detail.getByText('Reply: yes').waitFor();
    await trace.getByRole('button', { name: /^delegate_parallel 2 tasks/ }).click();
    await detail.getByText('Tool delegate_parallel').waitFor();
    expect(await detail.getByRole('listitem').allTextContents()).toEqual(['quick one', 'slow one']);

    await client.cancel(id);
    await statusIs(page, 'Cancelled', 15_000);
    for (const when of ['live', 'reloaded']) {
      if (when === 'reloaded') await page.reload();
      await trace
        .getByRole('button', { name: /^delegate_parallel 2 tasks .*, Stopped by cancel$/ })
        .waitFor();
      await trace.getByRole('button', { name: /^Waiting for children .*, Ended with the run$/ }).waitFor();
      expect(await slow.getAttribute('href')).toMatch(/^\/console\/runs\/run_/);
    }
    await page.close();
  });

  it('fits a 420 px screen: lists become cards whose values say their column, and nothing scrolls sideways', async () => {
    const id = await submit([{ content: 'narrow' }], 'A run seen on a phone');
    await client.wait(id);
    const page = await openSignedIn('/console/');
    await page.setViewportSize({ width: 420, height: 900 });
    const row = page.getByRole('row').filter({ hasText: id });
    await row.waitFor();
    const labels = await row
      .getByRole('cell')
      .evaluateAll((cells) => cells.map((cell) => getComputedStyle(cell, '::before').content));
    expect(labels).toEqual([
      '"Run"',
      '"Task"',
      '"Status"',
      '"Duration"',
      '"Model"',
      '"Tokens"',
      '"Cost"',
      '"Created"',
      '"Attempts"',
    ]);
    const sideways = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    // The model that answered: a replay script's is "replay".
    expect(await row.getByRole('cell').nth(4).textContent()).toBe('replay');
    expect(await sideways()).toBeLessThanOrEqual(0);
    // The navigation is a bar across the top, the current section marked for all.
    expect(
      await page
        .getByRole('navigation', { name: 'Sections' })
        .getByRole('link', { name: 'Runs' })
        .getAttribute('aria-current'),
    ).toBe('page');
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'runs-420');
    await row.getByRole('link', { name: id }).click();
    await statusIs(page, 'Completed');
    expect(await page.locator('dl.facts-row').textContent()).toContain('Modelreplay');
    await page.getByRole('region', { name: 'Trace' }).getByRole('button').first().waitFor();
    expect(await sideways()).toBeLessThanOrEqual(0);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'run-420');
    await page.close();
  });

  it('opens every section of the navigation, each without a serious axe violation, in light and dark', async () => {
    await client.webhooks
      .create({ url: 'https://hooks.example.com/tether', events: ['run.completed'] })
      .catch(() => undefined);
    await client.schedules
      .create({
        name: 'nightly-triage',
        cron: '0 3 * * *',
        timezone: 'Europe/Paris',
        run: { input: 'Triage', model: { provider: 'replay', script: [{ content: 'ok' }] } },
      })
      .catch(() => undefined);
    const page = await openSignedIn('/console/');
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    const nav = page.getByRole('navigation', { name: 'Sections' });
    const sections: [string, string, RegExp][] = [
      ['Sessions', 'sessions', /New session/],
      ['Webhooks', 'webhooks', /tether webhooks add|No webhook endpoints yet/],
      // The schedule added above, with its next run to come and none made yet.
      ['Schedules', 'schedules', /None yet/],
      ['Usage', 'usage', /Tokens per day/],
      ['Skills', 'skills', /skills,/],
      ['Memory', 'memory', /Nothing saved in default|notes in default/],
      ['Settings', 'settings', /Appearance/],
    ];
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const [name, path, shows] of sections) {
        await nav.getByRole('link', { name }).click();
        expect(new URL(page.url()).pathname).toBe(`/console/${path}`);
        await page.getByRole('heading', { name, exact: true }).waitFor();
        await page.getByText(shows).first().waitFor();
        expect(await nav.getByRole('link', { name }).getAttribute('aria-current')).toBe('page');
        expect(await seriousViolations(page), `${name} in ${scheme}`).toEqual([]);
        if (scheme === 'light') await screenshot(page, path);
        else await page.emulateMedia({ colorScheme: 'dark' });
      }
    }
    // Settings: the models, the live workers, and a colour scheme chosen here wins over the system's.
    await page.getByRole('heading', { name: 'Workers' }).waitFor();
    await page.getByRole('table', { name: 'Live workers' }).waitFor();
    await page.getByText('Scripted (replay) runs: allowed.').waitFor();
    const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    await page.emulateMedia({ colorScheme: 'light' });
    expect(await background()).toBe('rgb(255, 255, 255)');
    await page.getByRole('radio', { name: 'Dark' }).check();
    expect(await background()).toBe('rgb(13, 17, 23)');
    await page.reload();
    await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
    expect(await background()).toBe('rgb(13, 17, 23)');
    await page.getByRole('radio', { name: 'As the system' }).check();
    expect(await background()).toBe('rgb(255, 255, 255)');
    await page.close();
  });
});

async function tabTo(page: Page, target: string, limit = 60): Promise<string[]> {
  const passed: string[] = [];
  for (let step = 0; step < limit; step++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const element = document.activeElement;
      return element?.id || element?.textContent?.trim() || element?.tagName || '';
    });
    passed.push(focused);
    if (focused === target) return passed;
  }
  throw new Error(`Tab never reached ${target}: ${passed.join(', ')}`);
}

/** Drops a text file named `name` on the page's drop zone, as a real drag and drop does (a DataTransfer made in the page). */
async function dropFile(page: Page, name: string, content: string): Promise<void> {
  await page.getByTestId('drop-zone').evaluate(
    (zone, file) => {
      const data = new DataTransfer();
      data.items.add(new File([file.content], file.name, { type: 'text/plain' }));
      for (const type of ['dragenter', 'dragover', 'drop']) {
        zone.dispatchEvent(new DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }));
      }
    },
    { name, content },
  );
}

/** What the form's Request field shows, parsed. */
async function requestShown(page: Page): Promise<Record<string, unknown>> {
  return JSON.parse(await page.getByLabel('Request', { exact: true }).inputValue()) as Record<
    string,
    unknown
  >;
}

/** How long a form's replay run gets to complete: the machine these run on is shared, at loads of 20 on 2 cores. */
const RUN_DONE_MS = 45_000;

const READ_BOTH: ReplayScript = [
  { toolCalls: [call('read_file', { path: 'notes/plan.md' }), call('read_file', { path: 'dropped.txt' })] },
  { content: 'read both' },
];

describe('the New run form in Chromium', () => {
  it('submits a task with a pasted file and a dropped one, showing the request it sends; the run page shows its events and the workspace has the files', async () => {
    const page = await openSignedIn('/console/');
    await page.getByRole('link', { name: 'New run' }).click();
    expect(new URL(page.url()).pathname).toBe('/console/runs/new');
    await page.getByRole('heading', { name: 'New run' }).waitFor();
    expect(await page.title()).toBe('New run · Tether console');

    // The toolsets are the catalog's, the API's defaults checked.
    const catalog = await client.tools();
    await page.getByRole('checkbox').first().waitFor();
    for (const name of catalog.toolsets) {
      expect(await page.getByRole('checkbox', { name, exact: true }).isChecked()).toBe(
        catalog.defaultToolsets.includes(name),
      );
    }
    expect(catalog.defaultToolsets).toContain('interaction');
    await page.getByRole('checkbox', { name: 'interaction', exact: true }).uncheck();

    await page.getByLabel('Task', { exact: true }).fill('Read both files\nthen stop');
    await page.getByLabel('Path', { exact: true }).fill('notes/plan.md');
    await page.getByLabel('Content', { exact: true }).fill('# Plan\n1. read\n');
    await page.getByRole('button', { name: 'Add file' }).click();
    await dropFile(page, 'dropped.txt', 'dropped text\n');
    const files = page.getByRole('list', { name: 'Files to send' });
    await files.getByRole('button', { name: 'Remove dropped.txt' }).waitFor();
    expect(await files.getByRole('listitem').allTextContents()).toEqual([
      'notes/plan.md 15 characters Remove notes/plan.md',
      'dropped.txt 13 characters Remove dropped.txt',
    ]);
    // The pasted fields are emptied for the next file.
    expect(await page.getByLabel('Path', { exact: true }).inputValue()).toBe('');

    await page.getByLabel('Locale').selectOption('en');
    await page.getByLabel('Clarify timeout (seconds)').fill('120');
    await page.getByLabel('Max steps').fill('5');
    await page.getByText('Advanced', { exact: true }).click();
    await page
      .getByLabel(/^Advanced/)
      .fill(JSON.stringify({ model: { provider: 'replay', script: READ_BOTH }, metadata: { from: 'form' } }));
    const expected = {
      input: 'Read both files\nthen stop',
      toolsets: catalog.defaultToolsets.filter((name) => name !== 'interaction'),
      locale: 'en',
      clarify: { timeoutMs: 120_000 },
      limits: { maxSteps: 5 },
      files: { 'notes/plan.md': '# Plan\n1. read\n', 'dropped.txt': 'dropped text\n' },
      model: { provider: 'replay', script: READ_BOTH },
      metadata: { from: 'form' },
    };
    // The catalog's order, not the order of the clicks.
    expected.toolsets = catalog.toolsets.filter((name) => expected.toolsets.includes(name));
    expect(await requestShown(page)).toEqual(expected);
    expect(await seriousViolations(page)).toEqual([]);
    if (SCREENSHOTS !== undefined) {
      await mkdir(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: join(SCREENSHOTS, 'console-new-run.png'), fullPage: true });
    }

    await page.getByRole('button', { name: 'Submit' }).click();
    await page.waitForURL(/\/console\/runs\/run_/);
    const id = new URL(page.url()).pathname.split('/').pop() as string;
    await statusIs(page, 'Completed', RUN_DONE_MS);
    await page.getByText('read both', { exact: true }).first().waitFor();
    expect(await page.locator('.event-tool').count()).toBe(2);
    const run = await client.get(id);
    expect(run).toMatchObject({ title: 'Read both files', metadata: { from: 'form' }, output: 'read both' });
    expect(await (await client.file(id, 'notes/plan.md')).text()).toBe('# Plan\n1. read\n');
    expect(await (await client.file(id, 'dropped.txt')).text()).toBe('dropped text\n');
    // The run is the signed-in tenant's: another tenant's key gets 404 for it and its files.
    const other = new TetherClient({ baseUrl: base, apiKey: OTHER_TENANT_KEY });
    await expect(other.get(id)).rejects.toMatchObject({ status: 404 });
    await expect(other.file(id, 'dropped.txt')).rejects.toMatchObject({ status: 404 });
    await page.close();
  });

  it("shows the API's refusal beside the form and keeps everything typed; a wrong Advanced is caught before sending; the page loads on reload", async () => {
    const page = await openSignedIn('/console/runs/new');
    await page.getByRole('heading', { name: 'New run' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'New run' }).waitFor();
    await page.getByRole('checkbox').first().waitFor();
    const newest = async () => (await client.list({ limit: 1 })).data[0]?.id;
    const before = await newest();

    await page.getByLabel('Task', { exact: true }).fill('Keep what I typed');
    await page.getByLabel('Path', { exact: true }).fill('kept.md');
    await page.getByLabel('Content', { exact: true }).fill('kept\n');
    // Enter in the path field adds the file; it does not submit the form.
    await page.getByLabel('Path', { exact: true }).press('Enter');
    await page.getByRole('button', { name: 'Remove kept.md' }).waitFor();
    await page.getByLabel('Max steps').fill('5000');
    await page.getByText('Advanced', { exact: true }).click();

    // Not JSON: said under the field and again on Submit; nothing is sent.
    await page.getByLabel(/^Advanced/).fill('{"model": ');
    await page.getByText(/^Advanced is not valid JSON: /).waitFor();
    expect(await page.getByLabel(/^Advanced/).getAttribute('aria-invalid')).toBe('true');
    await page.getByRole('button', { name: 'Submit' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /^Advanced is not valid JSON: / })
      .waitFor();
    await page.getByLabel(/^Advanced/).fill('[1, 2]');
    await page.getByText(/^Advanced must be a JSON object/).waitFor();

    // Past the API's bound: its own 400, word for word, beside the form.
    const advanced = JSON.stringify({ model: { provider: 'replay', script: [{ content: 'kept it' }] } });
    await page.getByLabel(/^Advanced/).fill(advanced);
    const body = await requestShown(page);
    expect(body).toMatchObject({ limits: { maxSteps: 5000 }, files: { 'kept.md': 'kept\n' } });
    const refusal = await client.submit(body as never).then(
      () => undefined,
      (error: Error & { code?: string }) => `${error.message} (${error.code})`,
    );
    expect(refusal).toMatch(/maxSteps.*\(ERR_VALIDATION\)$/);
    await page.getByRole('button', { name: 'Submit' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: `The API refused the run: ${refusal}` })
      .waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/runs/new');
    expect(await page.getByLabel('Task', { exact: true }).inputValue()).toBe('Keep what I typed');
    expect(await page.getByLabel('Max steps').inputValue()).toBe('5000');
    expect(await page.getByLabel(/^Advanced/).inputValue()).toBe(advanced);
    await page.getByRole('button', { name: 'Remove kept.md' }).waitFor();
    expect(await newest()).toBe(before);
    expect(await seriousViolations(page)).toEqual([]);

    // Past the body limit (1 MiB): the API's 413, the form kept again.
    await page.getByLabel('Max steps').fill('3');
    await dropFile(page, 'big.txt', 'x'.repeat(1_100_000));
    await page.getByRole('button', { name: 'Remove big.txt' }).waitFor();
    await page.getByRole('button', { name: 'Submit' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /^The API refused the run: .*\(ERR_BODY_TOO_LARGE\)$/ })
      .waitFor();
    expect(await newest()).toBe(before);
    await page.getByRole('button', { name: 'Remove big.txt' }).click();

    // Put right, the same form goes through.
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.waitForURL(/\/console\/runs\/run_/);
    await statusIs(page, 'Completed', RUN_DONE_MS);
    const id = new URL(page.url()).pathname.split('/').pop() as string;
    expect(await newest()).toBe(id);
    expect(await (await client.file(id, 'kept.md')).text()).toBe('kept\n');
    await page.close();
  });

  it('fits one column on a phone-sized screen and is used with the keyboard alone', async () => {
    const page = await openSignedIn('/console/runs/new');
    await page.setViewportSize({ width: 375, height: 700 });
    await page.getByRole('checkbox').first().waitFor();
    // Nothing wider than the screen, and each field starts at the same left edge, under the one before.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    const boxes = await Promise.all(
      ['Task', 'Locale', 'Max steps', 'Request'].map((label) =>
        page.getByLabel(label, { exact: true }).boundingBox(),
      ),
    );
    const lefts = new Set(boxes.map((box) => Math.round(box?.x ?? -1)));
    expect(lefts.size).toBe(1);
    const tops = boxes.map((box) => box?.y ?? -1);
    expect(tops).toEqual([...tops].sort((a, b) => a - b));

    // The keyboard alone: type the task, uncheck a toolset with Space, add a file, open Advanced, submit with Enter.
    await page.getByLabel('Task', { exact: true }).focus();
    await page.keyboard.type('Typed at the keyboard');
    const passed = await tabTo(page, 'toolset-planning');
    expect(passed[0]).toMatch(/^toolset-/);
    await page.keyboard.press('Space');
    expect(await page.getByRole('checkbox', { name: 'planning', exact: true }).isChecked()).toBe(false);
    await tabTo(page, 'file-path');
    await page.keyboard.type('typed.md');
    await page.keyboard.press('Tab');
    await page.keyboard.type('typed\n');
    await tabTo(page, 'Add file');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Remove typed.md' }).waitFor();
    await page.getByLabel('Task', { exact: true }).focus();
    await tabTo(page, 'Advanced');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab');
    await page.keyboard.insertText(
      JSON.stringify({ model: { provider: 'replay', script: [{ content: 'typed' }] } }),
    );
    expect((await requestShown(page)).toolsets).not.toContain('planning');
    await tabTo(page, 'Submit');
    expect(await seriousViolations(page)).toEqual([]);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/runs\/run_/);
    await statusIs(page, 'Completed', RUN_DONE_MS);
    const id = new URL(page.url()).pathname.split('/').pop() as string;
    expect(await (await client.file(id, 'typed.md')).text()).toBe('typed\n');
    await page.close();
  });

  it('says at once that the server has no model, with the three set-ups, and Submit says why; the scripted example fills the form, asks its question, and fixes greet.js', async () => {
    // The stack's API has no model key (its env is sharedEnv and API_ENV alone) and allows replay.
    expect(await client.models()).toEqual({ profiles: [], defaultProfile: null, replay: true });
    const newest = async () => (await client.list({ limit: 1 })).data[0]?.id;
    const before = await newest();
    const page = await openSignedIn('/console/runs/new');
    const notice = page.getByRole('complementary', { name: 'No model is configured on this server' });
    await notice.waitFor();
    const setups = [
      'OPENAI_API_KEY=sk-… pnpm start',
      'OPENAI_BASE_URL=http://localhost:11434/v1 pnpm start',
      'ANTHROPIC_API_KEY=sk-ant-… pnpm start',
    ];
    expect(await notice.locator('code.new-run-command').allTextContents()).toEqual(setups);
    await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await notice.getByRole('button', { name: `Copy ${setups[1]}` }).click();
    // The button says it copied, and still names what it copies.
    await notice.getByRole('button', { name: `Copied ${setups[1]}` }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(setups[1]);
    await page.getByRole('checkbox').first().waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    // No model named: said beside Submit before it is clicked, and again on Submit; nothing is sent.
    const why = 'No model is configured on this server, and this run names none: try the scripted example';
    await page.getByLabel('Task', { exact: true }).fill('No model for me');
    await page.getByText(why, { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByRole('alert').filter({ hasText: why }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/runs/new');
    expect(await newest()).toBe(before);

    // The example: pnpm demo's task, files and script, explained (the panel takes focus); the Request is its body.
    await notice.getByRole('button', { name: 'Try a scripted example' }).click();
    const panel = page.getByRole('region', { name: 'The scripted example' });
    await panel.waitFor();
    expect(await panel.evaluate((element) => element === document.activeElement)).toBe(true);
    expect(await panel.locator('li code').allTextContents()).toEqual([
      'todo',
      'list_dir',
      'read_file',
      'patch',
      'bash',
      'clarify',
      'write_file',
    ]);
    await page.getByRole('alert').waitFor({ state: 'detached' });
    const example = await import('../src/new-run-example.js');
    const catalog = await client.tools();
    expect(await page.getByLabel('Task', { exact: true }).inputValue()).toBe(
      'Fix the greeting in greet.js and check that it works.',
    );
    expect(await requestShown(page)).toEqual({
      input: 'Fix the greeting in greet.js and check that it works.',
      toolsets: catalog.toolsets.filter((name) => catalog.defaultToolsets.includes(name)),
      files: Object.fromEntries(example.EXAMPLE_FILES.map((file) => [file.path, file.content])),
      model: { provider: 'replay', script: example.EXAMPLE_SCRIPT },
    });
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('button', { name: 'Submit' }).click();
    await page.waitForURL(/\/console\/runs\/run_/);
    const id = new URL(page.url()).pathname.split('/').pop() as string;
    await page
      .getByText('The greeting is fixed. Should I leave a note of the change in NOTES.md?', { exact: true })
      .waitFor({ timeout: RUN_DONE_MS });
    await statusIs(page, 'Waiting for input');
    await page.getByRole('button', { name: 'No, that is all', exact: true }).click();
    await statusIs(page, 'Completed', RUN_DONE_MS);
    await page.getByText('Answered: No, that is all').waitFor();
    const paths = (await client.files(id)).files.map((file) => file.path);
    expect(paths).toEqual(['NOTES.md', 'greet.js', 'package.json']);
    const greet = await (await client.file(id, 'greet.js')).text();
    expect(greet).not.toBe(example.EXAMPLE_FILES[0]?.content);
    expect(greet).toMatch(/\n {4}return `Hello, \$\{name\}!`;\n/);
    expect(greet).not.toContain('Helo');
    await page.close();
  });

  it('says the example needs TETHER_ALLOW_REPLAY=1 where replay is off, offers it beside a configured model, and keeps the form as before on an API without GET /v1/models', async () => {
    const page = await openSignedIn('/console/runs/new');
    await page.getByRole('heading', { name: 'New run' }).waitFor();
    // The page's GET /v1/models answered here, as other servers would (the key stays the API's to check).
    let models: unknown = { profiles: [], defaultProfile: null, replay: false };
    await page.route('**/v1/models', (route) =>
      models === undefined
        ? route.fulfill({ status: 404, json: { error: { code: 'ERR_NOT_FOUND', message: 'Not Found' } } })
        : route.fulfill({ json: models }),
    );
    await page.reload();
    const notice = page.getByRole('complementary', { name: 'No model is configured on this server' });
    await notice.getByText('TETHER_ALLOW_REPLAY=1', { exact: true }).waitFor();
    expect(await notice.locator('code.new-run-command').count()).toBe(3);
    expect(await page.getByRole('button', { name: 'Try a scripted example' }).count()).toBe(0);
    await page.getByLabel('Task', { exact: true }).fill('x');
    await page.getByRole('button', { name: 'Submit' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /names none: start the server with a model \(see above\)\.$/ })
      .waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    // A server with a model: no notice, the example a secondary button; it can be taken out again.
    models = {
      profiles: [{ name: 'default', provider: 'openai', model: 'gpt-4o-mini', default: true }],
      defaultProfile: 'default',
      replay: true,
    };
    await page.reload();
    await page.getByRole('button', { name: 'Try a scripted example' }).click();
    expect(await page.getByRole('heading', { name: /^No model is configured/ }).count()).toBe(0);
    await page.getByRole('region', { name: 'The scripted example' }).waitFor();
    expect(await requestShown(page)).toMatchObject({ model: { provider: 'replay' } });
    await page.getByRole('button', { name: 'Remove the scripted model' }).click();
    await page.getByRole('region', { name: 'The scripted example' }).waitFor({ state: 'detached' });
    expect('model' in (await requestShown(page))).toBe(false);

    // An older API (404): no notice, no example, and Submit sends as before, the API's refusal shown.
    models = undefined;
    const answered = page.waitForResponse('**/v1/models');
    await page.reload();
    expect((await answered).status()).toBe(404);
    await page.getByRole('checkbox').first().waitFor();
    expect(await page.getByRole('heading', { name: /^No model is configured/ }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Try a scripted example' }).count()).toBe(0);
    await page.getByLabel('Task', { exact: true }).fill('x');
    await page.getByRole('button', { name: 'Submit' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /^The API refused the run: .*\(ERR_MODEL_PROFILE_REQUIRED\)$/ })
      .waitFor();
    await page.close();
  });
});

describe('sessions in the console', () => {
  /**
   * Each message the page sends goes to the real API with the next of `runs`
   * merged into its body: a replay model scripted per message (and any other
   * run field, such as `clarify`), as the API's session tests send them.
   */
  async function scriptMessages(
    page: Page,
    runs: Record<string, unknown>[],
  ): Promise<{ sent: () => number }> {
    let sent = 0;
    await page.route('**/v1/sessions/*/runs', async (route) => {
      const extra = runs[sent++];
      // More messages than scripted: refused, and the test's next wait fails.
      if (extra === undefined) return route.abort();
      await route.continue({ postData: JSON.stringify({ ...route.request().postDataJSON(), ...extra }) });
    });
    return { sent: () => sent };
  }
  const replay = (...script: ReplayScript) => ({ model: { provider: 'replay', script } });
  const message = (page: Page) => page.getByRole('textbox', { name: 'Message', exact: true });
  const assistantSaid = (page: Page, text: string) =>
    page.locator('.bubble-assistant .said').filter({ hasText: new RegExp(`^${text}$`) });
  const youSaid = (page: Page, text: string) =>
    page.locator('.bubble-user .said').filter({ hasText: new RegExp(`^${text}$`) });

  it('creates a session from the list, sends two messages and shows both answers, each once after a reload', async () => {
    const page = await openSignedIn('/console/');
    await page.getByRole('navigation').getByRole('link', { name: 'Sessions', exact: true }).click();
    await page.getByRole('heading', { name: 'Sessions', exact: true }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/sessions');
    const scripted = await scriptMessages(page, [
      replay({ content: 'Hello! This is the first answer.' }),
      replay(
        { toolCalls: [call('list_dir', { path: '.' })] },
        { content: 'The second answer, after a look.' },
      ),
    ]);
    await page.getByRole('button', { name: 'New session' }).click();
    await page.waitForURL(/\/console\/sessions\/ses_[0-9a-z]{26}$/);
    const id = new URL(page.url()).pathname.split('/').at(-1) as string;
    await page.getByRole('heading', { name: `Session ${id}` }).waitFor();
    expect(await message(page).getAttribute('placeholder')).toBe('Write a message');

    // Enter sends; Shift+Enter starts a new line and sends nothing.
    await message(page).fill('Hi there');
    await message(page).press('Shift+Enter');
    await message(page).pressSequentially('second line');
    expect(await message(page).inputValue()).toBe('Hi there\nsecond line');
    expect(scripted.sent()).toBe(0);
    await message(page).press('Enter');
    await assistantSaid(page, 'Hello! This is the first answer.').waitFor();
    await youSaid(page, 'Hi there\nsecond line').waitFor();
    // The field empties once the POST answers, which the run's events over SSE may beat.
    await expect.poll(() => message(page).inputValue()).toBe('');

    await message(page).fill('And a second question?');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await assistantSaid(page, 'The second answer, after a look.').waitFor();
    await page
      .getByTestId('session-status')
      .filter({ hasText: /^Idle$/ })
      .waitFor();
    // The chat, taller than the window now, follows what arrives: the page stays at its end.
    await page.waitForFunction(() => {
      const { scrollHeight } = document.documentElement;
      return scrollHeight > window.innerHeight && window.innerHeight + window.scrollY >= scrollHeight - 80;
    });
    // Scrolled up to read, it stays put as the page grows; back at the end, it follows again.
    const grow = () =>
      page.evaluate(() => {
        const filler = document.createElement('div');
        filler.className = 'test-filler';
        filler.style.height = '600px';
        document.body.append(filler);
      });
    await page.mouse.wheel(0, -100_000);
    await page.waitForFunction(() => window.scrollY === 0);
    await grow();
    await page.evaluate(
      () => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))),
    );
    expect(await page.evaluate(() => window.scrollY)).toBe(0);
    const atEnd = () =>
      page.waitForFunction(
        () => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 1,
      );
    await page.mouse.wheel(0, 100_000);
    await atEnd();
    await grow();
    await atEnd();
    await page.evaluate(() => {
      for (const filler of document.querySelectorAll('.test-filler')) filler.remove();
    });
    // The run's tool calls are one collapsed block, with a link to the run.
    const tools = page.locator('details.tool-calls');
    expect(await tools.count()).toBe(1);
    expect(await tools.locator('summary').textContent()).toBe('1 tool call: list_dir');
    expect(await tools.getAttribute('open')).toBeNull();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'session');

    const transcript = await client.sessions.messages(id);
    const runIds = [...new Set(transcript.data.map((entry) => entry.runId))];
    expect(transcript.data.filter((entry) => entry.role === 'user').map((entry) => entry.content)).toEqual([
      'Hi there\nsecond line',
      'And a second question?',
    ]);
    expect(runIds).toHaveLength(2);

    // A reloaded deep link replays the session's stream: every message once, in order.
    await page.reload();
    await assistantSaid(page, 'The second answer, after a look.').waitFor();
    expect(await page.locator('.bubble .said').allTextContents()).toEqual([
      'Hi there\nsecond line',
      'Hello! This is the first answer.',
      'And a second question?',
      'The second answer, after a look.',
    ]);
    await page.getByRole('link', { name: `Run ${runIds[1]}` }).click();
    expect(new URL(page.url()).pathname).toBe(`/console/runs/${runIds[1]}`);
    await statusIs(page, 'Completed');

    // The list shows it, newest first, and passes axe.
    await page.getByRole('navigation').getByRole('link', { name: 'Sessions', exact: true }).click();
    const row = page.getByRole('row').filter({ hasText: id });
    await row.getByRole('cell', { name: 'Idle' }).waitFor();
    expect(await page.getByRole('row').nth(1).textContent()).toContain(id);
    expect(await row.getByRole('cell').nth(2).textContent()).toBe('2');
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'sessions');
    await page.close();
  });

  it('stops a running message at once, and deletes the session after confirming', async () => {
    const { id } = await client.sessions.create();
    const page = await openSignedIn(`/console/sessions/${id}`);
    await page.getByRole('heading', { name: `Session ${id}` }).waitFor();
    await scriptMessages(page, [
      {
        ...replay(
          { toolCalls: [call('clarify', { question: 'Hold on?', choices: [] })] },
          { content: 'Never said: the run is stopped first.' },
        ),
        clarify: { timeoutMs: 600_000 },
      },
      replay({ content: 'After the stop.' }),
    ]);
    const stop = page.getByRole('button', { name: 'Stop', exact: true });
    // Nothing runs: nothing to stop.
    expect(await stop.count()).toBe(0);
    await message(page).fill('Wait for me');
    await message(page).press('Enter');
    await page
      .getByTestId('session-status')
      .filter({ hasText: /^Waiting for input$/ })
      .waitFor();
    await stop.click();
    await page.getByText('This run was cancelled.', { exact: true }).waitFor();
    await page
      .getByTestId('session-status')
      .filter({ hasText: /^Idle$/ })
      .waitFor();
    await stop.waitFor({ state: 'detached' });
    const stopped = (await client.sessions.get(id)).lastRunId as string;
    expect((await client.get(stopped)).status).toBe('cancelled');
    // The session goes on.
    await message(page).fill('Again');
    await message(page).press('Enter');
    await assistantSaid(page, 'After the stop.').waitFor();

    // "Keep it" keeps it; confirmed, the session is gone and the page is the list's.
    await page.getByRole('button', { name: 'Delete session', exact: true }).click();
    await page.getByRole('button', { name: 'Keep it', exact: true }).click();
    expect((await client.sessions.get(id)).id).toBe(id);
    await page.getByRole('button', { name: 'Delete session', exact: true }).click();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Yes, delete the session', exact: true }).click();
    await page.waitForURL(/\/console\/sessions$/);
    await page.getByRole('heading', { name: 'Sessions', exact: true }).waitFor();
    await expect(client.sessions.get(id)).rejects.toMatchObject({ status: 404 });
    await expect(client.get(stopped)).rejects.toMatchObject({ status: 404 });
    expect(await page.getByRole('row').filter({ hasText: id }).count()).toBe(0);
    await page.close();
  });

  it('answers one question card by clicking a choice, and a returned one with the next message (the REST fallback)', async () => {
    const { id } = await client.sessions.create();
    const page = await openSignedIn(`/console/sessions/${id}`);
    await page.getByRole('heading', { name: `Session ${id}` }).waitFor();
    await scriptMessages(page, [
      {
        ...replay(
          { toolCalls: [call('clarify', { question: 'Which colour?', choices: ['red', 'blue'] })] },
          { content: 'Blue it is.' },
        ),
        clarify: { timeoutMs: 600_000 },
      },
      {
        ...replay({ toolCalls: [call('clarify', { question: 'Which size?', choices: ['small', 'large'] })] }),
        clarify: { mode: 'return' },
      },
      replay({ content: 'Large, noted.' }),
    ]);

    // A suspended run's question: a card in the chat, answered by a click.
    await message(page).fill('Paint it');
    await message(page).press('Enter');
    const card = page.getByRole('region', { name: 'The run asks' });
    await card.getByText('Which colour?', { exact: true }).waitFor();
    await page
      .getByTestId('session-status')
      .filter({ hasText: /^Waiting for input$/ })
      .waitFor();
    expect(await card.getByTestId('countdown').textContent()).toMatch(/^\d+:\d\d$/);
    expect(await page.locator('#message-hint').textContent()).toContain('your message is sent as its answer');
    expect(await seriousViolations(page)).toEqual([]);
    await card.getByRole('button', { name: 'blue', exact: true }).click();
    await assistantSaid(page, 'Blue it is.').waitFor();
    await card.waitFor({ state: 'detached' });
    expect(await page.getByTestId('decided').allTextContents()).toEqual(['Answered: blue']);

    // A question returned as the run's output (clarify mode "return"): the next message answers it.
    await message(page).fill('Pick a size');
    await message(page).press('Enter');
    const returned = page.getByRole('region', { name: 'The assistant asks' });
    await returned.getByText('Which size?', { exact: true }).waitFor();
    await returned.getByRole('button', { name: 'large', exact: true }).waitFor();
    await page
      .getByTestId('session-status')
      .filter({ hasText: /^Idle$/ })
      .waitFor();
    expect(await page.locator('#message-hint').textContent()).toContain('your next message is its answer');
    await page.locator('#message-hint').scrollIntoViewIfNeeded();
    await screenshot(page, 'session-question');
    await message(page).fill('large');
    await message(page).press('Enter');
    await assistantSaid(page, 'Large, noted.').waitFor();
    await returned.waitFor({ state: 'detached' });
    await page.getByTestId('decided').filter({ hasText: 'Answered: large' }).waitFor();
    expect(await page.getByTestId('decided').allTextContents()).toEqual([
      'Answered: blue',
      'Answered: large',
    ]);
    expect(await page.locator('#message-hint').textContent()).toBe(
      'Enter sends, Shift+Enter starts a new line.',
    );

    // The model saw its returned question answered by that message: the transcript has it as the next user turn.
    const transcript = (await client.sessions.messages(id)).data;
    expect(transcript.filter((entry) => entry.role === 'user').map((entry) => entry.content)).toEqual([
      'Paint it',
      'Pick a size',
      'large',
    ]);
    await page.close();
  });

  it('shows a held call as a card in the chat, sends a message into the running one, and approves the call', async () => {
    const { id } = await client.sessions.create();
    const page = await openSignedIn(`/console/sessions/${id}`);
    await page.getByRole('heading', { name: `Session ${id}` }).waitFor();
    await scriptMessages(page, [
      {
        ...replay(
          { toolCalls: [call('write_file', { path: 'notes.md', content: 'v2\n' })] },
          { content: 'Noted, briefly.' },
        ),
        approval: { tools: ['write_file'] },
      },
      // The message steered into the live run goes to the same route (its other fields unused).
      {},
    ]);
    await message(page).fill('Note the release');
    await message(page).press('Enter');
    const held = page.getByRole('region', { name: /^write_file apr_/ });
    await held.getByRole('button', { name: 'Approve', exact: true }).waitFor();
    await held.getByText('Held by the policy’s tools: write_file').waitFor();

    // The message field offers to send into the running message instead of queueing behind it.
    await page.getByRole('checkbox', { name: 'Send into the running message' }).check();
    expect(await page.locator('#message-hint').textContent()).toContain('without stopping it');
    await message(page).fill('Keep it brief');
    await message(page).press('Enter');
    const steered = page.locator('.bubble-user').filter({ hasText: 'Keep it brief' });
    await steered.getByText('Pending: the run takes it at its next turn').waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    await held.getByRole('button', { name: 'Approve', exact: true }).click();
    await held
      .getByRole('status')
      .filter({ hasText: /^Approved by acme$/ })
      .waitFor();
    await assistantSaid(page, 'Noted, briefly.').waitFor();
    await steered.getByText('Delivered: taken at turn 2').waitFor();
    // One run: the steered message started none.
    expect((await client.sessions.get(id)).runs).toBe(1);
  });

  it("answers a suspended question typed in the Message field, shows one answered through the API and one timed out as decided, and another tenant's or a deleted session as not found", async () => {
    const { id } = await client.sessions.create();
    const page = await openSignedIn(`/console/sessions/${id}`);
    await scriptMessages(page, [
      {
        ...replay(
          { toolCalls: [call('clarify', { question: 'Name the file', choices: [] })] },
          { content: 'Named.' },
        ),
        clarify: { timeoutMs: 600_000 },
      },
      {
        ...replay(
          { toolCalls: [call('clarify', { question: 'Asked elsewhere?', choices: [] })] },
          { content: 'Got it.' },
        ),
        clarify: { timeoutMs: 600_000 },
      },
      {
        ...replay(
          { toolCalls: [call('clarify', { question: 'Too slow?', choices: [] })] },
          { content: 'Moved on.' },
        ),
        clarify: { timeoutMs: 1_000 },
      },
    ]);
    await message(page).fill('Write notes');
    await message(page).press('Enter');
    await page.getByText('Name the file', { exact: true }).waitFor();
    await page
      .getByTestId('session-status')
      .filter({ hasText: /^Waiting for input$/ })
      .waitFor();
    expect(await message(page).getAttribute('placeholder')).toBe('Write your answer');
    await message(page).fill('notes.md');
    await message(page).press('Enter');
    await assistantSaid(page, 'Named.').waitFor();
    await page.getByTestId('decided').filter({ hasText: 'Answered: notes.md' }).waitFor();
    // The answer went to the question: the session had one run.
    expect((await client.sessions.get(id)).runs).toBe(1);

    // Answered elsewhere (through the API): the card shows the answer; timed out: it says so.
    await message(page).fill('Ask me again');
    await message(page).press('Enter');
    await page.getByText('Asked elsewhere?', { exact: true }).waitFor();
    await page.getByRole('textbox', { name: 'Your answer' }).waitFor();
    const pending = (await client.sessions.get(id)).pendingClarify;
    if (!pending) throw new Error('the session has no question waiting');
    await client.answer(pending.runId, pending.requestId, 'from the API');
    await assistantSaid(page, 'Got it.').waitFor();
    await page.getByRole('textbox', { name: 'Your answer' }).waitFor({ state: 'detached' });
    await page.getByTestId('decided').filter({ hasText: 'Answered: from the API' }).waitFor();
    await page
      .getByTestId('session-status')
      .filter({ hasText: /^Idle$/ })
      .waitFor();
    await message(page).fill('Ask and wait');
    await message(page).press('Enter');
    await assistantSaid(page, 'Moved on.').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('decided').allTextContents()).toEqual([
      'Answered: notes.md',
      'Answered: from the API',
      'No answer came in time.',
    ]);

    // Deleted while open: the page says so, and so does a reload.
    await client.sessions.delete(id);
    await page.getByRole('heading', { name: 'Session not found' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Session not found' }).waitFor();

    // Another tenant's session: not found, as if it did not exist.
    const beta = new TetherClient({ baseUrl: base, apiKey: OTHER_TENANT_KEY });
    const theirs = await beta.sessions.create();
    await page.goto(`${base}/console/sessions/${theirs.id}`);
    await page.getByRole('heading', { name: 'Session not found' }).waitFor();
    await beta.sessions.delete(theirs.id);
    await page.close();
  });

  it("shows each event once when the API restarts in the middle of the session's stream, for a message sent elsewhere", async () => {
    const steps = 4;
    const { id } = await client.sessions.create();
    await client.sessions.send(id, {
      input: 'Count slowly\nplease',
      model: {
        provider: 'replay',
        script: [
          ...Array.from({ length: steps }, (_, step) => ({
            toolCalls: [call('bash', { command: `sleep 1; echo step-${step}` })],
          })),
          { content: 'counted' },
        ],
      },
    });
    const page = await openSignedIn(`/console/sessions/${id}`);
    // A run this page did not send: its title stands for the message until the transcript has it.
    await youSaid(page, 'Count slowly').waitFor();
    await page.locator('details.tool-calls summary').waitFor({ timeout: 15_000 });
    const api = stack.apis[0];
    if (!api) throw new Error('the stack has no API');
    await api.stop('SIGTERM');
    // The same port, so that the page's stream reconnects to it (with Last-Event-ID).
    stack.apis[0] = await startApiProcess({
      redisUrl: stack.redisUrl,
      port: api.port,
      env: { ...sharedEnv(), ...API_ENV },
      readyTimeoutMs: 60_000,
    });
    await assistantSaid(page, 'counted').waitFor({ timeout: 60_000 });
    await youSaid(page, 'Count slowly\nplease').waitFor();
    expect(await page.locator('.bubble .said').allTextContents()).toEqual([
      'Count slowly\nplease',
      'counted',
    ]);
    expect(await page.locator('details.tool-calls summary').allTextContents()).toEqual([
      `${steps} tool calls: ${Array(steps).fill('bash').join(', ')}`,
    ]);
    await page.locator('details.tool-calls summary').click();
    // Each call once, with its arguments and its result.
    const calls = page.locator('details.tool-calls li');
    expect(await calls.count()).toBe(steps);
    for (let step = 0; step < steps; step++) {
      expect(await calls.nth(step).locator('pre').count()).toBe(2);
      expect(await calls.nth(step).locator('pre').nth(1).textContent()).toContain(`step-${step}`);
    }
    await page.close();
  });
});

describe('approval of tool calls in the console', () => {
  /** Submits a replay run whose calls `approval` holds for a decision. */
  async function submitHeld(script: ReplayScript, approval: Record<string, unknown>): Promise<string> {
    const { id } = await client.submit({
      input: 'an approval test',
      model: { provider: 'replay', script },
      approval,
    });
    return id;
  }
  /** The request ids of the first `count` calls run `id` holds, read from its event stream. */
  async function heldCalls(id: string, count: number): Promise<string[]> {
    const requests: string[] = [];
    for await (const event of client.stream(id)) {
      if (event.type === 'approval.requested') requests.push(event.data.requestId);
      if (requests.length === count) return requests;
    }
    throw new Error(`run ${id} ended holding ${requests.length} calls`);
  }
  /** A held call's card: a region named by its tool and its request. */
  const card = (page: Page, tool: string, requestId: string) =>
    page.getByRole('region', { name: `${tool} ${requestId}`, exact: true });
  /** The timeline's row of a tool call, its output and result opened. */
  async function callResult(page: Page, tool: string): Promise<string> {
    const row = page
      .getByRole('region', { name: 'Timeline events' })
      .locator('.event-tool')
      .filter({ hasText: `Tool ${tool}` });
    await row.getByText(`Output of ${tool}`).click();
    return (await row.locator('pre.result').textContent()) ?? '';
  }

  it('shows each held call in full with its reason and time left, and approves them one by one', async () => {
    const id = await submitHeld(
      [
        {
          toolCalls: [
            call('write_file', { path: 'notes.md', content: 'v2, reviewed\n' }),
            call('bash', { command: 'cat notes.md' }),
          ],
        },
        { content: 'done' },
      ],
      { tools: ['write_file'], bash: { ask: ['^cat\\b'] } },
    );
    const [write, bash] = (await heldCalls(id, 2)) as [string, string];
    const page = await openSignedIn(`/console/runs/${id}`);
    await statusIs(page, 'Waiting for input');
    const writeCard = card(page, 'write_file', write);
    const bashCard = card(page, 'bash', bash);
    await writeCard.getByText('tools: write_file', { exact: true }).waitFor();
    expect(await writeCard.getByTestId('countdown').textContent()).toMatch(/^\d+:\d\d$/);
    // The arguments in full, as what they are: the file and what would be written, the command.
    await writeCard.getByText('notes.md', { exact: true }).waitFor();
    expect(await writeCard.locator('pre.args').textContent()).toBe('v2, reviewed\n');
    expect(await bashCard.locator('pre.command code').textContent()).toBe('cat notes.md');
    await bashCard.getByText('bash.ask: ^cat\\b', { exact: true }).waitFor();
    // The wait is in the trace and the held calls in the events.
    await page
      .getByRole('region', { name: 'Trace' })
      .getByRole('button', { name: /^Waiting for approval of write_file notes\.md .*, Waiting$/ })
      .waitFor();
    await page.getByText('Held for approval: write_file notes.md').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'approval');

    // One decided: its card says so (and who) while the run waits on the other.
    await writeCard.getByRole('button', { name: 'Approve', exact: true }).click();
    const approved = writeCard.getByRole('status').filter({ hasText: /^Approved by acme$/ });
    await approved.waitFor();
    // The button pressed is gone: the focus is on what it did.
    await expect.poll(() => approved.evaluate((element) => element === document.activeElement)).toBe(true);
    expect(await writeCard.getByRole('button').count()).toBe(0);
    await statusIs(page, 'Waiting for input');
    await bashCard.getByRole('button', { name: 'Approve', exact: true }).click();
    await statusIs(page, 'Completed');
    await writeCard.waitFor({ state: 'detached' });
    expect(await callResult(page, 'bash')).toContain('v2, reviewed');
    expect(await page.locator('.event-approval').allTextContents()).toEqual([
      expect.stringMatching(
        /Held for approval: write_file notes\.md \(tools: write_file\) Approved by acme$/,
      ),
      expect.stringMatching(
        /Held for approval: bash cat notes\.md \(bash\.ask: \^cat\\b\) Approved by acme$/,
      ),
    ]);
    await page
      .getByRole('region', { name: 'Trace' })
      .getByRole('button', { name: /^Waiting for approval of bash cat notes\.md .*, Done waiting$/ })
      .waitFor();
    await page.close();
  });

  it('edits a held call: invalid JSON is caught before sending, a field the tool refuses is said by the API, then the edit runs', async () => {
    const id = await submitHeld(
      [{ toolCalls: [call('write_file', { path: 'notes.md', content: 'draft\n' })] }, { content: 'done' }],
      { tools: ['write_file'] },
    );
    const [write] = (await heldCalls(id, 1)) as [string];
    const page = await openSignedIn(`/console/runs/${id}`);
    const held = card(page, 'write_file', write);
    await held.getByRole('button', { name: 'Edit', exact: true }).click();
    const editor = held.getByRole('textbox', { name: 'Arguments (JSON)' });
    await expect.poll(() => editor.evaluate((element) => element === document.activeElement)).toBe(true);
    expect(JSON.parse(await editor.inputValue())).toEqual({ path: 'notes.md', content: 'draft\n' });

    // Not JSON: said under the field as it is typed, and on Send edit, and nothing is sent.
    await editor.fill('{"path": "notes.md",');
    expect(await editor.getAttribute('aria-invalid')).toBe('true');
    await held.getByText(/^Not valid JSON: /).waitFor();
    await held.getByRole('button', { name: 'Send edit' }).click();
    await held
      .getByRole('alert')
      .filter({ hasText: /^Not sent: Not valid JSON: / })
      .waitFor();
    expect(await editor.evaluate((element) => element === document.activeElement)).toBe(true);
    expect((await client.get(id)).pendingApprovals?.map((approval) => approval.requestId)).toEqual([write]);

    // JSON the tool refuses (no content): the API's message names the field; the editor stays open.
    await editor.fill('{"path": "notes.md"}');
    expect(await editor.getAttribute('aria-invalid')).toBeNull();
    expect(await held.getByRole('alert').count()).toBe(0);
    await held.getByRole('button', { name: 'Send edit' }).click();
    await held
      .getByRole('alert')
      .filter({ hasText: /^arguments: Invalid arguments for write_file: missing required field `content`/ })
      .waitFor();
    expect(await editor.inputValue()).toBe('{"path": "notes.md"}');
    expect(await seriousViolations(page)).toEqual([]);

    await editor.fill('{"path": "notes.md", "content": "reviewed\\n"}');
    await held.getByRole('button', { name: 'Send edit' }).click();
    await statusIs(page, 'Completed');
    expect(await callResult(page, 'write_file')).toMatch(/^A reviewer changed the arguments/);
    await page.locator('.event-approval').getByText('Edited by acme').waitFor();
    expect(await (await client.file(id, 'notes.md')).text()).toBe('reviewed\n');
    await page.close();
  });

  it('rejects a held call with a message for the model, which its result carries', async () => {
    const id = await submitHeld(
      [{ toolCalls: [call('bash', { command: 'rm -rf build' })] }, { content: 'done' }],
      { bash: { ask: ['^rm\\b'] } },
    );
    const [rm] = (await heldCalls(id, 1)) as [string];
    const page = await openSignedIn(`/console/runs/${id}`);
    const held = card(page, 'bash', rm);
    await held.getByRole('button', { name: 'Reject', exact: true }).click();
    expect(
      await held.getByRole('button', { name: 'Reject', exact: true }).getAttribute('aria-expanded'),
    ).toBe('true');
    await held.getByRole('textbox', { name: 'Message for the model' }).fill('Keep the build folder.');
    await held.getByRole('button', { name: 'Send rejection' }).click();
    await statusIs(page, 'Completed');
    const result = await callResult(page, 'bash');
    expect(result).toMatch(/^A reviewer refused this bash call/);
    expect(result).toContain('Keep the build folder.');
    const decided = page.locator('.event-approval');
    await decided.getByText('Rejected by acme').waitFor();
    await decided.getByText('Message for the model: Keep the build folder.').waitFor();
    await page.close();
  });

  it('says when another decision came first, and reads the run again', async () => {
    const id = await submitHeld(
      [{ toolCalls: [call('write_file', { path: 'late.md', content: 'late\n' })] }, { content: 'done' }],
      { tools: ['write_file'] },
    );
    const [write] = (await heldCalls(id, 1)) as [string];
    const page = await openSignedIn(`/console/runs/${id}`);
    const held = card(page, 'write_file', write);
    await held.getByRole('button', { name: 'Approve', exact: true }).waitFor();
    // The page's decision reaches the API just after one taken through the API: the first wins.
    await page.route('**/v1/runs/*/approvals/*', async (route) => {
      await client.decide(id, write, { decision: 'reject', message: 'decided elsewhere' });
      await route.continue();
    });
    await held.getByRole('button', { name: 'Approve', exact: true }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: `write_file (${write}): A decision on this call was taken already` })
      .waitFor();
    await statusIs(page, 'Completed');
    await held.waitFor({ state: 'detached' });
    await page.locator('.event-approval').getByText('Rejected by acme').waitFor();
    await page.close();
  });
});

describe('steering a live run in the console', () => {
  /** `POST /v1/runs/:id/messages` as any API client sends it: the status it answers. */
  async function steerThroughApi(id: string, content: string): Promise<number> {
    const response = await fetch(`${base}/v1/runs/${id}/messages`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ content }),
    });
    return response.status;
  }
  /** The timeline's row of the message sent with `content`. */
  const messageRow = (page: Page, content: string) =>
    page
      .getByRole('region', { name: 'Timeline events' })
      .locator('.event-user')
      .filter({ hasText: `You: ${content}` });

  it('sends a message to a run waiting on its question, shows it pending, then taken at its next turn once answered', async () => {
    const id = await submit(CLARIFY_COLOUR, 'Pick a colour for the banner');
    await questionOf(id);
    const page = await openSignedIn(`/console/runs/${id}`);
    await statusIs(page, 'Waiting for input');
    const form = page.getByRole('form', { name: 'Message the run' });
    const field = form.getByLabel('Message for the run');
    await field.waitFor();
    await form.getByText(/^The run takes it at its next turn boundary/).waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    await field.fill('Keep the answer short.');
    await form.getByRole('button', { name: 'Send message' }).click();
    const pending = form.getByRole('region', { name: 'Pending: not taken by the run yet' });
    await pending.getByText('Keep the answer short.', { exact: true }).waitFor();
    expect(await field.inputValue()).toBe('');
    // The run's event reaches the timeline: the message is pending there too, once.
    await messageRow(page, 'Keep the answer short.')
      .getByText('Pending: the run takes it at its next turn')
      .waitFor();
    expect(await pending.getByRole('listitem').count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'steer');

    // A run holds at most 20 messages it has not taken: the 21st is refused in words, its text kept.
    for (let sent = 1; sent < 20; sent++) expect(await steerThroughApi(id, `Note ${sent}`)).toBe(202);
    await field.fill('One more thing');
    await field.press('Control+Enter');
    await form
      .getByRole('alert')
      .filter({ hasText: 'The run already holds 20 messages it has not taken' })
      .waitFor();
    expect(await field.inputValue()).toBe('One more thing');
    await pending.getByText('Note 19', { exact: true }).waitFor();

    // Answered, the run wakes and takes the messages before its next model turn, then completes.
    await page.getByRole('button', { name: 'blue', exact: true }).click();
    await statusIs(page, 'Completed');
    await form.waitFor({ state: 'detached' });
    await messageRow(page, 'Note 19').getByText('Delivered: taken at turn 2').waitFor();
    expect(await page.locator('pre.output').textContent()).toBe('done');
    // The first message is at the timeline's start, out of the view that followed the run's end.
    await page.getByRole('region', { name: 'Timeline events' }).focus();
    await page.keyboard.press('Home');
    await messageRow(page, 'Keep the answer short.').getByText('Delivered: taken at turn 2').waitFor();

    await page.reload();
    await statusIs(page, 'Completed');
    await messageRow(page, 'Note 19').getByText('Delivered: taken at turn 2').waitFor();
    expect(await messageRow(page, 'Note 19').count()).toBe(1);
    expect(await page.getByRole('form', { name: 'Message the run' }).count()).toBe(0);
    await page.close();
  });
});
