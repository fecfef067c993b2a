import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isProcessAlive } from './process-tree.js';
import { probeBwrap } from './sandbox.js';
import { startSandboxedServer } from './sandboxed-server.js';
import { createFixture, type Fixture } from './testing/fixtures.js';

const probe = await probeBwrap();
const bwrapSkipReason = probe.ok ? '' : `bubblewrap does not work on this host (${probe.detail})`;

let fx: Fixture;
beforeEach(async () => {
  fx = await createFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

/** The next line on a stream. */
async function line(stream: Readable, buffered: { text: string }): Promise<string> {
  for (;;) {
    const at = buffered.text.indexOf('\n');
    if (at >= 0) {
      const first = buffered.text.slice(0, at);
      buffered.text = buffered.text.slice(at + 1);
      return first;
    }
    const [chunk] = (await once(stream, 'data')) as [Buffer];
    buffered.text += chunk.toString('utf8');
  }
}

/**
 * A line server: prints its working directory, its variables and the pid of
 * a background child, then answers each line it reads.
 */
const SERVER = [
  'sleep 300 & echo "child $!"',
  'echo "cwd $(pwd)"',
  'echo env "$SERVER_FLAG" "[$TETHER_WORKER_SECRET]"',
  'while IFS= read -r l; do echo "got $l"; done',
].join('\n');

describe.each([
  { sandbox: 'none' as const, skip: '' },
  { sandbox: 'bwrap' as const, skip: bwrapSkipReason },
])('a sandboxed server with sandbox $sandbox', ({ sandbox, skip }) => {
  it.skipIf(skip !== '')(
    'runs in the workspace with its own variables only, answers over stdin and stdout, and stop leaves nothing behind',
    async () => {
      process.env.TETHER_WORKER_SECRET = 'leak';
      const server = await startSandboxedServer(
        fx.context({ sandbox }),
        { command: 'sh', args: ['-c', SERVER], env: { SERVER_FLAG: 'on' } },
        'the MCP server test',
      ).finally(() => {
        delete process.env.TETHER_WORKER_SECRET;
      });
      const out = { text: '' };
      const child = Number((await line(server.stdout, out)).split(' ')[1]);
      expect(await line(server.stdout, out)).toMatch(new RegExp(`^cwd .*${fx.workspace.split('/').at(-1)}$`));
      expect(await line(server.stdout, out)).toBe('env on []');
      server.stdin.write('hello\n');
      expect(await line(server.stdout, out)).toBe('got hello');
      await server.stop();
      const ended = await server.ended;
      expect(ended.outcome).toBe('cancelled');
      expect(ended.survivors).toEqual([]);
      // Under bwrap the child's pid is of the sandbox's namespace; outside, it must be gone.
      if (sandbox === 'none') expect(isProcessAlive(child)).toBe(false);
    },
  );
});

it('is stopped with its run', async () => {
  const controller = new AbortController();
  const server = await startSandboxedServer(
    fx.context({ sandbox: 'none', signal: controller.signal }),
    { command: 'sleep', args: ['300'], env: {} },
    'the MCP server test',
  );
  controller.abort();
  expect((await server.ended).outcome).toBe('cancelled');
});

it('ends, and kills what it started, when the program exits by itself', async () => {
  const server = await startSandboxedServer(
    fx.context({ sandbox: 'none' }),
    { command: 'sh', args: ['-c', '(exec -a tether-left-behind sleep 300) & echo $!; exit 4'], env: {} },
    'the MCP server test',
  );
  const child = Number(await line(server.stdout, { text: '' }));
  const ended = await server.ended;
  expect(ended).toMatchObject({ outcome: 'exited', exitCode: 4 });
  expect(isProcessAlive(child)).toBe(false);
});
