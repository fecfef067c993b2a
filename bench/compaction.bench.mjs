// node bench/compaction.bench.mjs — the CPU cost of context compaction's bookkeeping, one JSON line each:
//   - `count`: counting a run's whole request (about 100k tokens, 150 turns) before a model turn, as the
//     attempt loop does: each turn adds an assistant message and a tool result and counts again, the
//     messages already counted coming from the per-object cache. Median and p99 of RUNS turns, in ms,
//     and the first (cold) count of the whole transcript. Goal: <= 2 ms per turn.
//   - `prune` and `summarise`: one compaction step of that transcript to a 64k-token threshold, the
//     model call left out (a provider that answers at once): median of RUNS steps, in ms.
// Needs `pnpm build`.
import { compactTranscript, RequestCounter } from '../packages/agent/dist/index.js';
import { rng } from './lib/source-gen.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const TURNS = 150;
const TARGET_COUNT_MS = 2;

const WORDS =
  'the file config value returns error test build line module import function result request 42 src/a.ts'.split(
    ' ',
  );
function text(random, chars) {
  let out = '';
  while (out.length < chars) {
    out += WORDS[Math.floor(random() * WORDS.length)];
    out += random() < 0.1 ? '\n' : ' ';
  }
  return out.slice(0, chars);
}

/** One model turn: an assistant message with a call, and its result of about 650 tokens. */
function turn(random, n) {
  const call = { id: `call_${n}`, name: 'bash', arguments: JSON.stringify({ command: text(random, 60) }) };
  return [
    { role: 'assistant', content: text(random, 80), toolCalls: [call] },
    { role: 'tool', toolCallId: call.id, content: text(random, 3_000) },
  ];
}

function transcript(seed) {
  const random = rng(seed);
  const messages = [
    { role: 'system', content: text(random, 12_000) },
    { role: 'user', content: text(random, 400) },
  ];
  for (let n = 0; n < TURNS; n++) messages.push(...turn(random, n));
  return { messages, random };
}

const tools = Array.from({ length: 12 }, (_, i) => ({
  name: `tool_${i}`,
  description: 'A tool. '.repeat(20),
  parameters: { type: 'object', properties: { path: { type: 'string' }, command: { type: 'string' } } },
}));

function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
const round = (ms) => Math.round(ms * 1_000) / 1_000;

// Counting before each turn.
{
  const { messages, random } = transcript(1);
  const counter = new RequestCounter();
  let start = performance.now();
  const tokens = counter.count(messages, tools);
  const coldMs = performance.now() - start;
  const times = [];
  for (let n = 0; n < RUNS; n++) {
    messages.push(...turn(random, TURNS + n));
    start = performance.now();
    counter.count(messages, tools);
    times.push(performance.now() - start);
  }
  const medianMs = quantile(times, 0.5);
  console.log(
    JSON.stringify({
      bench: 'compaction',
      step: 'count',
      tokens,
      messages: messages.length,
      coldMs: round(coldMs),
      medianMs: round(medianMs),
      p99Ms: round(quantile(times, 0.99)),
      targetMs: TARGET_COUNT_MS,
      ok: medianMs <= TARGET_COUNT_MS,
      runs: RUNS,
    }),
  );
}

// One compaction step, the model call left out.
const instant = {
  name: 'instant',
  complete: async () => ({
    content: 'Task: the summary.',
    toolCalls: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    finishReason: 'stop',
  }),
};
for (const strategy of ['prune', 'summarise']) {
  const times = [];
  let report;
  for (let n = 0; n < Math.min(RUNS, 40); n++) {
    const { messages } = transcript(2);
    const counter = new RequestCounter();
    counter.count(messages, tools); // counted before the turn, as the loop has
    const threshold = strategy === 'prune' ? 64_000 : 20_000;
    const start = performance.now();
    const compacted = await compactTranscript({
      messages,
      inputIndex: 1,
      tools,
      counter,
      threshold,
      target: Math.floor(threshold * 0.75),
      provider: instant,
      signal: new AbortController().signal,
      todos: [],
      onAnswer: () => {},
    });
    times.push(performance.now() - start);
    report = compacted?.report;
  }
  console.log(
    JSON.stringify({
      bench: 'compaction',
      step: strategy,
      strategyTaken: report?.strategy,
      beforeTokens: report?.beforeTokens,
      afterTokens: report?.afterTokens,
      prunedToolResults: report?.pruned,
      medianMs: round(quantile(times, 0.5)),
      p99Ms: round(quantile(times, 0.99)),
      runs: times.length,
    }),
  );
}
