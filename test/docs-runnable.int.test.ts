/**
 * The shell examples of README.md and docs/*.md that are marked runnable, run as a reader would run
 * them, against a real stack: so the docs cannot drift from what the API and the CLI do.
 *
 * The marker is an HTML comment (invisible on GitHub) on the line right before a ```sh (or ```bash)
 * fence, or a ```console transcript, whose `$ ` lines are the commands (the rest is their output, not
 * checked):
 *
 *   <!-- runnable -->                        the block runs on its own and must exit 0
 *   <!-- runnable: continues -->             it starts with the shell variables the previous runnable
 *                                            block of the same file left (an id it captured,
 *                                            `RUN=$(curl … | jq -r .id)`, and those it continued from)
 *   <!-- runnable: expect-status=409 -->     the last HTTP status curl saw must be 409
 *   <!-- runnable: pnpm-start -->            what a reader runs against `pnpm start`: at
 *                                            http://127.0.0.1:3000, with no API key and no model
 *                                            key (below)
 *
 * Options go after the colon, separated by spaces; an unknown one fails the test. Every block runs
 * with `bash` under `set -euo pipefail`, in a temporary directory that every block of its file
 * shares (with a README.md in it, for `--files .`), the repository's `tether` on PATH, and `TETHER_URL` and `TETHER_API_KEY` set
 * to the test stack's API and a key of tenant `acme`, as the docs' examples expect them. A file's
 * blocks run one after another, the files side by side (each `it` awaits its block). Each HTTP
 * status curl sees is recorded (its `--write-out` to stderr): every one must be below 400, except
 * the last when `expect-status` names it. The stack: Redis, one API and one worker, replay allowed,
 * a secrets key (webhooks, MCP headers), and a fake OpenAI-compatible server as the default model,
 * answering every turn with text: runs that name no model complete. A `pnpm-start` block runs
 * instead against a second API of that stack configured as `pnpm start` configures one (no API keys,
 * so every caller is tenant `default`; no model, so only replay runs are accepted), with that API's
 * address in place of `http://127.0.0.1:3000` and neither `TETHER_URL` nor `TETHER_API_KEY` set.
 *
 * Left unmarked: what cannot run here (docker compose, a real provider key, `pnpm start` itself,
 * an MCP server or webhook receiver on the internet) and blocks that only set the variables above.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type FakeOpenAIServer,
  killAllSpawned,
  startFakeOpenAI,
  streamText,
  testRedisUrl,
  uniquePrefix,
} from '@tether/testing';
import { type ApiProcess, type Stack, startApiProcess, startStack } from '@tether/testing/scripts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
// pnpm start's development settings (a plain script without types: loaded by URL, typed here).
const {
  developmentSettings,
}: { developmentSettings(home: string, env: Record<string, string>): { vars: Record<string, string> } } =
  await import(new URL('../scripts/start/dev-settings.mjs', import.meta.url).href);
const CLI = join(ROOT, 'packages/client/dist/cli.js');
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const KEY = 'sk_docs_example_0123456789';
// A block's own limit, generous for a loaded 2-core machine (a CLI command takes seconds to start
// there); a test waits for the blocks of its file before it, so its limit is larger still.
const BLOCK_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 180_000;
const OPTIONS = ['continues', 'expect-status', 'pnpm-start'] as const;
/** Where `pnpm start` serves the API: a `pnpm-start` block's address, replaced by the test's. */
const PNPM_START_URL = 'http://127.0.0.1:3000';

/** One marked block: where it is, what it runs, what it expects. */
interface Block {
  doc: string;
  line: number;
  code: string;
  continues: boolean;
  expectStatus: number | undefined;
  pnpmStart: boolean;
}

/** The marked blocks of `doc` (a path from the repository's root), in order. */
function runnableBlocks(doc: string, text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (const [index, line] of lines.entries()) {
    const marker = /^<!-- runnable(?::\s*(.*?))?\s*-->$/.exec(line.trim());
    if (!marker) {
      if (line.trimStart().startsWith('<!-- runnable'))
        throw new Error(`${doc}:${index + 1}: malformed marker ${line}`);
      continue;
    }
    const fence = lines[index + 1] ?? '';
    const kind = /^```(sh|bash|console)$/.exec(fence)?.[1];
    if (kind === undefined) {
      throw new Error(`${doc}:${index + 1}: a runnable marker must be followed by a sh or console fence`);
    }
    const end = lines.findIndex((l, i) => i > index + 1 && l === '```');
    if (end < 0) throw new Error(`${doc}:${index + 2}: the fence is never closed`);
    const body = lines.slice(index + 2, end);
    const block: Block = {
      doc,
      line: index + 2,
      code: (kind === 'console' ? body.filter((l) => l.startsWith('$ ')).map((l) => l.slice(2)) : body).join(
        '\n',
      ),
      continues: false,
      expectStatus: undefined,
      pnpmStart: false,
    };
    for (const option of (marker[1] ?? '').split(/\s+/).filter(Boolean)) {
      const [name, value] = option.split('=', 2);
      if (name === 'continues' && value === undefined) block.continues = true;
      else if (name === 'pnpm-start' && value === undefined) block.pnpmStart = true;
      else if (name === 'expect-status' && value !== undefined && /^[1-5]\d\d$/.test(value)) {
        block.expectStatus = Number(value);
      } else {
        throw new Error(
          `${doc}:${index + 1}: unknown runnable option "${option}" (known: ${OPTIONS.join(', ')})`,
        );
      }
    }
    // Else it would reach whatever serves the address it names: a developer's own `pnpm start`.
    if (block.pnpmStart && !block.code.includes(PNPM_START_URL)) {
      throw new Error(`${doc}:${index + 1}: a pnpm-start block reaches the API at ${PNPM_START_URL}`);
    }
    blocks.push(block);
  }
  return blocks;
}

const docs = await Promise.all(
  DOCS.map(async (doc) => ({ doc, blocks: runnableBlocks(doc, await readFile(join(ROOT, doc), 'utf8')) })),
);

// The script around a block, all on its first line (so that bash's line N is the fence's line plus
// N - 1): curl's statuses to stderr, the previous block's variables when it continues, and the
// variables it leaves saved for the next one.
function script(block: Block): string {
  const prelude = [
    'set -euo pipefail',
    `curl() { command curl --write-out '%{stderr}\\n@@status %{http_code}\\n' "$@"; }`,
    'compgen -v | sort > "$DOCS_STATE.before"',
    block.continues ? 'source "$DOCS_STATE"' : ': > "$DOCS_STATE"',
    `trap 'for v in $(compgen -v | sort | comm -13 "$DOCS_STATE.before" -); do declare -p "$v"; done > "$DOCS_STATE.next" 2>/dev/null || true' EXIT`,
  ];
  const code = block.pnpmStart ? block.code.replaceAll(PNPM_START_URL, pnpmStart.url) : block.code;
  return `${prelude.join('; ')}\n${code}\n`;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  statuses: number[];
}

/** Runs `block` in `cwd`; `state` is its file's variables file (outside `cwd`: `--files .` sends it). */
async function runBlock(block: Block, cwd: string, state: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  const started = performance.now();
  const child = spawn('bash', ['-c', script(block)], {
    cwd,
    env: { ...env, DOCS_STATE: state },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), BLOCK_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  clearTimeout(timer);
  const seconds = ((performance.now() - started) / 1_000).toFixed(1);
  if (code === null) stderr += `\n(killed after ${seconds} s)`;
  // The state the next block continues from: this one's, added to what it continued from.
  const next = await readFile(`${state}.next`, 'utf8').catch(() => '');
  await writeFile(state, next);
  const statuses = [...stderr.matchAll(/^@@status (\d{3})$/gm)].map((m) => Number(m[1]));
  return { code, stdout, stderr: stderr.replace(/^@@status \d{3}\n?/gm, ''), statuses };
}

let fake: FakeOpenAIServer;
let stack: Stack;
/** The stack's API as `pnpm start` runs one, for the `pnpm-start` blocks. */
let pnpmStart: ApiProcess;
let work: string;
let bin: string;
/** Each block's run, started once the stack is up: a file's blocks in order, the files at once. */
const results = new Map<Block, Promise<Ran>>();

beforeAll(async () => {
  fake = await startFakeOpenAI();
  // Every model turn of every run answers with text; far more than the examples start.
  fake.enqueue(...Array.from({ length: 500 }, () => streamText('Done: the example ran.')));
  work = await mkdtemp(join(tmpdir(), 'tether-docs-'));
  bin = join(work, 'bin');
  await mkdir(bin);
  await writeFile(join(bin, 'tether'), `#!/bin/sh\nexec node ${JSON.stringify(CLI)} "$@"\n`, { mode: 0o755 });
  // What every process shares: `pnpm start`'s API has these and no more.
  const shared = {
    TETHER_QUEUE_PREFIX: uniquePrefix('docs'),
    LOG_LEVEL: 'info',
    TETHER_ALLOW_REPLAY: '1',
    TETHER_WORKSPACE_ROOT: join(work, 'workspaces'),
  };
  stack = await startStack({
    redis: testRedisUrl(),
    env: {
      ...shared,
      TETHER_API_KEYS: `acme:${KEY}`,
      TETHER_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
      TETHER_PUBLIC_URL: 'https://tether.example.com',
      OPENAI_BASE_URL: fake.baseURL,
      OPENAI_API_KEY: 'sk-test',
      TETHER_MODEL: 'fake-model',
    },
  });
  // As pnpm start runs its API: its development settings (a secrets key of its own in its home,
  // webhooks to local receivers, replay) and nothing else.
  const home = join(work, '.tether');
  await mkdir(home);
  const development = developmentSettings(home, {}).vars;
  pnpmStart = await startApiProcess({
    name: 'api-pnpm-start',
    redisUrl: stack.redisUrl,
    env: { ...shared, ...development },
  });
  const plain = {
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    HOME: process.env.HOME,
    LANG: 'C.UTF-8',
    NO_COLOR: '1',
  };
  const env = { ...plain, TETHER_URL: stack.urls[0], TETHER_API_KEY: KEY };
  for (const { blocks } of docs) {
    // One chain per file, in a directory of its own (with a README.md for `--files .`).
    const dir = mkdtemp(join(work, 'doc-')).then(async (cwd) => {
      await writeFile(join(cwd, 'README.md'), '# A project\n\nIt prints hello.\n');
      return cwd;
    });
    let previous: Promise<unknown> = dir;
    for (const block of blocks) {
      const ran = previous.then(async () =>
        runBlock(block, await dir, `${await dir}.state`, block.pnpmStart ? plain : env),
      );
      results.set(block, ran);
      previous = ran.catch(() => undefined);
    }
  }
}, 90_000);

afterAll(async () => {
  await pnpmStart?.stop('SIGTERM', 3_000);
  await stack?.stop();
  await fake?.close();
  await killAllSpawned();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('runnable doc examples', () => {
  it('are marked in the docs whose examples all run against a stack', () => {
    const counts = Object.fromEntries(docs.map(({ doc, blocks }) => [doc, blocks.length]));
    expect(counts['docs/api.md']).toBeGreaterThan(10);
    expect(counts['docs/client.md']).toBeGreaterThan(1);
  });

  for (const { doc, blocks } of docs.filter((d) => d.blocks.length > 0)) {
    describe(doc, () => {
      for (const block of blocks) {
        it(
          `${doc}:${block.line}`,
          async () => {
            const ran = await results.get(block);
            if (ran === undefined) throw new Error(`${doc}:${block.line} was not run`);
            const where = `${doc}:${block.line} (bash's line N is the doc's line ${block.line} + N - 1)\n--- stdout\n${ran.stdout}\n--- stderr\n${ran.stderr}`;
            expect(ran.code, where).toBe(0);
            const last = block.expectStatus === undefined ? [] : ran.statuses.splice(-1);
            expect(
              ran.statuses.filter((status) => status >= 400 || status < 200),
              where,
            ).toEqual([]);
            if (block.expectStatus !== undefined) expect(last, where).toEqual([block.expectStatus]);
          },
          TEST_TIMEOUT_MS,
        );
      }
    });
  }
});
