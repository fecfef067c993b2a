// node bench/session-history.bench.mjs — one JSON line per transcript size: the median of 50 runs, in ms,
// of historyMessages windowing a session transcript (counts stored, as turnEntries writes them) to the
// default budget, the first call's time (code not yet optimised), and the median of JSON.parse of its
// stored entries (a Redis list's elements), for comparison.
// Needs `pnpm build`.
import {
  DEFAULT_SESSION_HISTORY_TOKENS,
  historyMessages,
  turnEntries,
} from '../packages/agent/dist/index.js';
import { rng } from './lib/source-gen.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 50);
const WARMUP = 20;
const TARGET_MS_200 = 1;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function measure(fn) {
  let last;
  for (let i = 0; i < WARMUP; i++) last = fn();
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    last = fn();
    times.push(performance.now() - start);
  }
  return { times, last };
}

const WORDS =
  'the file config value returns error test build line module import function result request'.split(' ');

function text(random, chars) {
  let out = '';
  while (out.length < chars) {
    out += WORDS[Math.floor(random() * WORDS.length)];
    out += random() < 0.1 ? '\n' : ' ';
  }
  return out.slice(0, chars);
}

/** A coding session: each turn a question, 0 to 3 tool calls with small, medium or large outputs, an answer. */
function session(turns, seed) {
  const random = rng(seed);
  const entries = [];
  for (let n = 0; n < turns; n++) {
    const messages = [{ role: 'user', content: text(random, 40 + Math.floor(random() * 300)) }];
    const calls = Array.from({ length: Math.floor(random() * 4) }, (_, i) => ({
      id: `call_${n}_${i}`,
      name: ['bash', 'read_file', 'patch'][i % 3],
      arguments: JSON.stringify({ path: `src/module-${n}-${i}.ts`, command: text(random, 30) }),
    }));
    if (calls.length > 0) {
      messages.push({ role: 'assistant', content: '', toolCalls: calls });
      for (const call of calls) {
        const size = [80, 1_500, 8_000][Math.floor(random() * 3)];
        messages.push({ role: 'tool', toolCallId: call.id, content: text(random, size) });
      }
    }
    messages.push({ role: 'assistant', content: text(random, 100 + Math.floor(random() * 600)) });
    entries.push(...turnEntries(messages, { runId: `run_${n}`, at: new Date(n * 60_000).toISOString() }));
  }
  return entries;
}

let pass = true;
for (const turns of [200, 2_000]) {
  const entries = session(turns, turns);
  const stored = entries.map((entry) => JSON.stringify(entry));
  // Entries as a run reads them from Redis (historyMessages neither changes nor caches them).
  const parsed = stored.map((s) => JSON.parse(s));
  const firstStart = performance.now();
  historyMessages(parsed, DEFAULT_SESSION_HISTORY_TOKENS);
  const firstMs = performance.now() - firstStart;
  const window = measure(() => historyMessages(parsed, DEFAULT_SESSION_HISTORY_TOKENS));
  const parse = measure(() => stored.map((s) => JSON.parse(s)));
  const medianMs = Number(median(window.times).toFixed(3));
  const t = window.last.truncated;
  const line = {
    bench: 'session-history',
    turns,
    entries: entries.length,
    budget: DEFAULT_SESSION_HISTORY_TOKENS,
    tokens_before: t?.tokensBefore,
    tokens_after: t?.tokensAfter,
    dropped_turns: t?.droppedTurns,
    shortened_tool_results: t?.shortenedToolResults,
    runs: RUNS,
    median_ms: medianMs,
    min_ms: Number(Math.min(...window.times).toFixed(3)),
    max_ms: Number(Math.max(...window.times).toFixed(3)),
    first_call_ms: Number(firstMs.toFixed(3)),
    json_parse_median_ms: Number(median(parse.times).toFixed(3)),
  };
  if (turns === 200) {
    line.target_ms = TARGET_MS_200;
    line.pass = medianMs <= TARGET_MS_200;
    pass &&= line.pass;
  }
  console.log(JSON.stringify(line));
}
if (!pass) process.exitCode = 1;
