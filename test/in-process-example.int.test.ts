/**
 * docs/examples/in-process.mjs, the embedding example docs/agent.md shows, run as a reader would: at a
 * terminal, against an OpenAI-compatible server (the fake one), with no Redis. The clarify question is
 * answered by typing, and the answer must reach the model.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inTerminal, killAllSpawned, startFakeOpenAI, streamText, streamToolCalls } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';

const EXAMPLE = fileURLToPath(new URL('../docs/examples/in-process.mjs', import.meta.url));

afterAll(killAllSpawned);

describe('docs/examples/in-process.mjs', () => {
  it('asks the clarify question at the terminal and gives the typed answer to the model', async () => {
    const server = await startFakeOpenAI();
    const workspace = await mkdtemp(join(tmpdir(), 'tether-example-'));
    try {
      server.enqueue(
        streamToolCalls([
          {
            id: 'call_subject',
            name: 'clarify',
            arguments: JSON.stringify({ question: 'Which subject?', choices: ['sea', 'snow'] }),
          },
        ]),
      );
      const haiku = 'snow on the branches\nthe queue is empty tonight\nno redis to wake\n';
      server.enqueue(
        streamToolCalls([
          { name: 'write_file', arguments: JSON.stringify({ path: 'haiku.txt', content: haiku }) },
        ]),
      );
      server.enqueue(streamText('A haiku about snow.'));
      const terminal = inTerminal([EXAMPLE, 'Write a haiku; ask me its subject.', workspace], {
        OPENAI_BASE_URL: server.baseURL,
        OPENAI_API_KEY: 'sk-test',
        TETHER_MODEL: 'fake-model',
      });
      await terminal.waitFor(/\? Which subject\? \(sea \/ snow\)/);
      terminal.type('snow\r');
      await terminal.waitFor(/A haiku about snow\./);
      expect(await terminal.exited).toBe(0);
      expect(terminal.screen()).toContain(`(workspace: ${workspace})`);

      // The tools ran in process too.
      expect(await readFile(join(workspace, 'haiku.txt'), 'utf8')).toBe(haiku);
      expect(server.requests).toHaveLength(3);
      const first = server.requests[0]?.body as {
        model: string;
        tools: Array<{ function: { name: string } }>;
      };
      expect(first.model).toBe('fake-model');
      // The default toolsets only: memory, skills and the crew need a worker's stores.
      expect(first.tools.map((tool) => tool.function.name).sort()).toEqual(
        ['bash', 'clarify', 'list_dir', 'patch', 'read_file', 'todo', 'write_file'].sort(),
      );
      const second = server.requests[1]?.body as { messages: Array<Record<string, unknown>> };
      expect(second.messages).toContainEqual(
        expect.objectContaining({ role: 'tool', tool_call_id: 'call_subject', content: 'snow' }),
      );
    } finally {
      await server.close();
      await rm(workspace, { recursive: true, force: true });
    }
  }, 30_000);
});
