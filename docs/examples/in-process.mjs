// @tether/agent in process, with no Redis, no queue and no worker: the design's gateway (5.3). A clarify
// question is asked at this terminal and the answer goes straight back to the model as clarify's result.
// Any OpenAI-compatible server (run `pnpm build` first):
//   OPENAI_API_KEY=… node docs/examples/in-process.mjs "Write a haiku to haiku.txt; ask me its subject."
//   OPENAI_BASE_URL=http://localhost:11434/v1 TETHER_MODEL=qwen2.5-coder node docs/examples/in-process.mjs "…" ./dir
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stdin, stdout } from 'node:process';
import { createInterface } from 'node:readline/promises';
import { buildSystemPrompt, createOpenAIProvider, initialCheckpoint, runAttempt } from '@tether/agent';
import { createTools, getAllToolNames, TOOLSET_DEFAULTS } from '@tether/tools';

const task = process.argv[2] ?? 'Write a haiku to haiku.txt. Ask me its subject first.';
const workspace = resolve(process.argv[3] ?? (await mkdtemp(join(tmpdir(), 'tether-'))));
const provider = createOpenAIProvider({
  baseURL: process.env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
  apiKey: process.env.OPENAI_API_KEY,
  model: process.env.TETHER_MODEL ?? 'gpt-4o-mini',
});
const controller = new AbortController();
const { signal } = controller;
const emit = (event) => {
  if (event.type === 'tool.call') console.log(`→ ${event.data.name} ${event.data.arguments}`);
};
// The default toolsets (base, planning, interaction): memory, skills and the crew need a worker's stores.
const toolNames = getAllToolNames(TOOLSET_DEFAULTS);
const checkpoint = initialCheckpoint({
  systemPrompt: buildSystemPrompt({ toolNames, locale: 'en', workspace }),
  input: task,
});
const todos = { get: () => checkpoint.todos, set: (items) => (checkpoint.todos = items) };
const tools = createTools({ runId: 'local', workspace, emit, signal, todos }, toolNames);

const outcome = await runAttempt({
  checkpoint,
  provider,
  tools,
  signal,
  emit,
  saveCheckpoint: async () => {}, // in memory only: store it somewhere to resume after a crash
  clarifyTimeoutMs: 5 * 60_000,
  onClarifyRequest: async (question, choices, asked) => {
    const terminal = createInterface({ input: stdin, output: stdout });
    terminal.once('SIGINT', () => controller.abort()); // Ctrl-C while asked: the run is cancelled
    const hint = choices.length > 0 ? ` (${choices.join(' / ')})` : '';
    try {
      return await terminal.question(`? ${question}${hint}\n> `, { signal: asked.signal });
    } finally {
      terminal.close();
    }
  },
});
await Promise.all(tools.map((tool) => tool.close?.()));
console.log(outcome.status === 'completed' ? outcome.output : outcome, `\n(workspace: ${workspace})`);
