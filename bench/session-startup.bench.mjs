// pnpm bench:session-startup — the start-up time a session adds to a run: the worker's start of an
// attempt (claim, then prepare: apps/worker's claimAttempt and prepareAttempt, the built dist, in this
// process with a real RunStore on a real redis-server) for a run of no session and for a run of a
// session whose transcript holds 200 turns, interleaved, STARTS of each. One JSON line with both
// medians and their difference (the goal: ≤ 10 ms added at the median), where a session start's time
// goes (its parts timed on their own), and the first checkpoint save each kind of run then makes. The
// tokenizer's encoding load (once per process) is timed first, on its own, and kept out of the figures.
// Needs `pnpm build`.

import { sessionHistory, toolNamesFor } from '../apps/worker/dist/attempt/prepare.js';
import { sessionTurn } from '../apps/worker/dist/attempt/run.js';
import { loadWorkerConfig } from '../apps/worker/dist/config.js';
import {
  buildSystemPrompt,
  countTokens,
  historyMessages,
  initialCheckpoint,
  storedCheckpoint,
  turnEntries,
} from '../packages/agent/dist/index.js';
import { createKeys } from '../packages/store/dist/redis/index.js';
import { RunService, RunStore } from '../packages/store/dist/runs/index.js';
import { SessionService } from '../packages/store/dist/sessions/index.js';
import { Redis } from '../packages/store/node_modules/ioredis/built/index.js';
import { rng } from './lib/source-gen.mjs';
import { benchRedis, median, percentile, tempDir } from './lib/stack.mjs';
import { interleaved, silent, timedStart } from './lib/startup.mjs';

const STARTS = Number(process.env.BENCH_STARTS ?? 50);
const TURNS = Number(process.env.BENCH_TURNS ?? 200);
const WARMUP = 10;
const TARGET_ADDED_MS = 10;

const ms = (value) => Number(value.toFixed(3));

// The encoding's load, paid by the first count in a process (here, before anything else counts).
const loadStart = performance.now();
countTokens('');
const encodingLoadMs = performance.now() - loadStart;

const redisServer = await benchRedis();
const workspaces = await tempDir('session-startup');
const keys = createKeys('{bench-session-startup}');
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
await redis.flushdb();
const store = new RunStore({ redis, keys });
const runs = new RunService({ redis, keys, store });
const sessions = new SessionService({ runs });
const config = loadWorkerConfig({
  REDIS_URL: redisServer.url,
  TETHER_QUEUE_PREFIX: keys.queuePrefix,
  TETHER_WORKSPACE_ROOT: workspaces.dir,
  TETHER_WORKER_ID: 'bench-session-startup',
  TETHER_SANDBOX: 'none',
});
const body = { input: 'What changed in the config loader since yesterday?', model: { provider: 'replay' } };

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

/** One turn of a coding session: a question, a tool call, its result (a few KB), the final answer. */
function turnMessages(random, n) {
  const call = {
    id: `call_${n}`,
    name: n % 2 ? 'read_file' : 'bash',
    arguments: JSON.stringify(n % 2 ? { path: `src/module-${n}.ts` } : { command: `pnpm vitest run t${n}` }),
  };
  return [
    { role: 'user', content: text(random, 80 + Math.floor(random() * 320)) },
    { role: 'assistant', content: '', toolCalls: [call] },
    { role: 'tool', toolCallId: call.id, content: text(random, 2_000 + Math.floor(random() * 4_000)) },
    { role: 'assistant', content: text(random, 200 + Math.floor(random() * 800)) },
  ];
}

let attempt = 0;
function contextFor(runId) {
  const fence = `${config.workerId}:lock-${++attempt}`;
  return { runId, attempt: 1, fence, config, store, log: silent, wakeSession: async () => {} };
}

// The session's transcript, written as the production path writes it: each turn moved in by the step
// that ends its run (finalize), its entries made by turnEntries with their stored token counts.
const session = await sessions.create('bench');
const random = rng(TURNS);
let entries = 0;
for (let n = 0; n < TURNS; n++) {
  const { run } = await sessions.submit('bench', session.id, body);
  const ctx = contextFor(run.id);
  await store.claim(run.id, ctx.fence, 1, config.workerId);
  const turn = turnEntries(turnMessages(random, n), { runId: run.id, at: new Date().toISOString() });
  entries += turn.length;
  await store.finalize(
    run.id,
    { status: 'completed', output: turn.at(-1).content },
    ctx.fence,
    [],
    turn.map((entry) => JSON.stringify(entry)),
  );
}
const transcriptKey = keys.session(session.id).transcript;
const transcriptBytes = (await redis.lrange(transcriptKey, 0, -1)).reduce((sum, s) => sum + s.length, 0);

/**
 * One start, timed: claim and prepare of a new run (submitted, untimed); then, timed on its own, the first
 * checkpoint save the run makes (after its first model step, with its turn so far when it has a session);
 * then the run is ended, untimed, and a session's transcript is put back to its TURNS turns.
 */
async function start(kind) {
  const { run } =
    kind === 'session' ? await sessions.submit('bench', session.id, body) : await runs.submit('bench', body);
  const ctx = contextFor(run.id);
  const { startMs, prepared } = await timedStart(ctx, kind);
  const { checkpoint } = prepared;
  checkpoint.messages.push({ role: 'assistant', content: 'Looking at the loader.' });
  checkpoint.step = 1;
  const saveBegin = performance.now();
  const turn = prepared.sessionId ? sessionTurn(run.id, checkpoint) : [];
  const progress = { todos: checkpoint.todos, usage: checkpoint.usage, step: checkpoint.step };
  await store.saveCheckpoint(
    run.id,
    ctx.fence,
    storedCheckpoint(checkpoint),
    progress,
    prepared.events,
    turn,
  );
  const saveMs = performance.now() - saveBegin;
  await store.finalize(run.id, { status: 'cancelled' }, ctx.fence);
  if (kind === 'session') await redis.ltrim(transcriptKey, 0, entries - 1);
  return { startMs, saveMs, prepared };
}

const results = await interleaved(['none', 'session'], STARTS, WARMUP, start);
const pick = (field) =>
  Object.fromEntries(Object.entries(results).map(([kind, list]) => [kind, list.map((r) => r[field])]));
const times = pick('startMs');
const saves = pick('saveMs');
const lastSession = results.session.at(-1).prepared;

// Where a session start's time goes: its parts, each timed on its own (median of STARTS), and the
// JSON of its checkpoint, which every save of the run writes.
const parts = { read: [], parse: [], window: [], checkpoint: [], sessionHistory: [], stringify: [] };
let checkpointBytes = 0;
const toolNames = toolNamesFor(body);
for (let i = 0; i < STARTS; i++) {
  let begin = performance.now();
  const stored = await store.readTranscript(session.id);
  parts.read.push(performance.now() - begin);
  begin = performance.now();
  const parsed = stored.map((json) => JSON.parse(json));
  parts.parse.push(performance.now() - begin);
  begin = performance.now();
  const window = historyMessages(parsed, config.sessionHistoryTokens);
  parts.window.push(performance.now() - begin);
  begin = performance.now();
  const checkpoint = initialCheckpoint({
    systemPrompt: buildSystemPrompt({ toolNames, locale: 'en', workspace: workspaces.dir }),
    input: body.input,
    history: window.messages,
    historyRef: { entries: parsed.length, budget: config.sessionHistoryTokens },
  });
  parts.checkpoint.push(performance.now() - begin);
  begin = performance.now();
  // As the worker stores it: the history by reference.
  checkpointBytes = storedCheckpoint(checkpoint).length;
  parts.stringify.push(performance.now() - begin);
  begin = performance.now();
  await sessionHistory(store, session.id, config.sessionHistoryTokens);
  parts.sessionHistory.push(performance.now() - begin);
}

const noneMs = median(times.none);
const sessionMs = median(times.session);
const truncated = lastSession.events.find((event) => event.type === 'session.truncated')?.data;
const added = sessionMs - noneMs;
console.log(
  JSON.stringify({
    bench: 'session-startup',
    turns: TURNS,
    entries,
    transcript_kb: Math.round(transcriptBytes / 1024),
    budget: config.sessionHistoryTokens,
    history_messages: lastSession.checkpoint.history ?? 0,
    dropped_turns: truncated?.droppedTurns ?? 0,
    tokens_before: truncated?.tokensBefore,
    tokens_after: truncated?.tokensAfter,
    starts: STARTS,
    no_session_median_ms: ms(noneMs),
    session_median_ms: ms(sessionMs),
    added_median_ms: ms(added),
    no_session_p90_ms: ms(percentile(times.none, 90)),
    session_p90_ms: ms(percentile(times.session, 90)),
    parts_median_ms: {
      lrange: ms(median(parts.read)),
      json_parse: ms(median(parts.parse)),
      window: ms(median(parts.window)),
      initial_checkpoint: ms(median(parts.checkpoint)),
      session_history: ms(median(parts.sessionHistory)),
    },
    first_save_median_ms: { no_session: ms(median(saves.none)), session: ms(median(saves.session)) },
    session_checkpoint_kb: Math.round(checkpointBytes / 1024),
    session_checkpoint_stringify_median_ms: ms(median(parts.stringify)),
    encoding_load_ms: ms(encodingLoadMs),
    target_added_ms: TARGET_ADDED_MS,
    pass: added <= TARGET_ADDED_MS,
  }),
);
if (added > TARGET_ADDED_MS) process.exitCode = 1;

await runs.close();
redis.disconnect();
await redisServer.stop();
await workspaces.remove();
