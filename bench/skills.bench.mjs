// pnpm bench:skills — the start-up time the skill toolset adds to a run: the worker's start of an
// attempt (claim, then prepare: apps/worker's claimAttempt and prepareAttempt, the built dist, in this
// process with a real RunStore and SkillStore on a real redis-server) for a run without the skill
// toolset and for one with it, whose tenant has 200 skills (a SKILL.md of 1 to 3 KB and a script each),
// interleaved, STARTS of each, after the tenant's index was read and its folder for bash written out once
// (warm-up): a start then asks Redis for the tenant's version only. One JSON
// line with both medians and their difference (the goal: ≤ 5 ms added at the median), where a skills
// start's time goes (its parts timed on their own), and what a change costs the next start: the folder
// of the new version written out (200 skills), timed on its own. A third kind of run has both the
// memory and the skill toolsets, its scope holding 1,000 entries (bench:memory's full scope): the
// added start-up with both on (the goal: ≤ 5 ms at the median too).
// Needs `pnpm build`.

import { loadWorkerConfig } from '../apps/worker/dist/config.js';
import { SkillFolders, SkillIndexes } from '../apps/worker/dist/skills.js';
import { buildSystemPrompt } from '../packages/agent/dist/index.js';
import { MemoryStore } from '../packages/store/dist/memory/index.js';
import { createKeys } from '../packages/store/dist/redis/index.js';
import { RunService, RunStore } from '../packages/store/dist/runs/index.js';
import { SkillStore } from '../packages/store/dist/skills/index.js';
import { Redis } from '../packages/store/node_modules/ioredis/built/index.js';
import { rng } from './lib/source-gen.mjs';
import { benchRedis, median, percentile, tempDir } from './lib/stack.mjs';
import { interleaved, silent, timedStart } from './lib/startup.mjs';

const STARTS = Number(process.env.BENCH_STARTS ?? 50);
const SKILLS = Number(process.env.BENCH_SKILLS ?? 200);
const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 1_000);
const WARMUP = 10;
const TARGET_ADDED_MS = 5;

const ms = (value) => Number(value.toFixed(3));

const redisServer = await benchRedis();
const workspaces = await tempDir('skills');
const cache = await tempDir('skills-cache');
const keys = createKeys('{bench-skills}');
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
await redis.flushdb();
const store = new RunStore({ redis, keys });
const runs = new RunService({ redis, keys, store });
const config = loadWorkerConfig({
  REDIS_URL: redisServer.url,
  TETHER_QUEUE_PREFIX: keys.queuePrefix,
  TETHER_WORKSPACE_ROOT: workspaces.dir,
  TETHER_WORKER_ID: 'bench-skills',
  TETHER_SANDBOX: 'none',
  TETHER_SKILLS_CACHE_DIR: cache.dir,
});
const skillStore = new SkillStore({
  redis,
  keys,
  limits: { maxCount: config.skillsMaxCount, maxBytes: config.skillsMaxBytes, maxFiles: 100 },
});
const folders = new SkillFolders({ store: skillStore, base: cache.dir, logger: silent });
const indexes = new SkillIndexes(skillStore);
const skills = { store: skillStore, indexes, folders };

const WORDS =
  'deploy the service check logs release build test report staging production script config rollback'.split(
    ' ',
  );
function text(random, chars) {
  let out = '';
  while (out.length < chars) {
    out += WORDS[Math.floor(random() * WORDS.length)];
    out += random() < 0.08 ? '\n' : ' ';
  }
  return out.slice(0, chars);
}

// The tenant's skills, written as the API writes them.
const random = rng(SKILLS);
let skillBytes = 0;
for (let i = 0; i < SKILLS; i++) {
  const name = `skill-${String(i).padStart(3, '0')}`;
  const description = text(random, 80 + Math.floor(random() * 160))
    .replace(/\s+/g, ' ')
    .trim();
  const files = {
    'SKILL.md': `---\nname: ${name}\ndescription: ${description}\n---\n# Steps\n${text(random, 1000 + Math.floor(random() * 2000))}\n`,
    'scripts/run.sh': `#!/bin/sh\necho ${name}\n${text(random, 200)}\n`,
  };
  for (const content of Object.values(files)) skillBytes += Buffer.byteLength(content);
  const saved = await skillStore.save('bench', { name, mode: 'replace', set: files, description });
  if (!saved.ok) throw new Error(`could not write ${name}: ${JSON.stringify(saved)}`);
}

// Memory, for a run with both toolsets: a scope of ENTRIES entries (bench:memory's full scope).
const memory = new MemoryStore({ redis, keys });
const SCOPE = 'user-42';
for (let i = 0; i < ENTRIES; i++) {
  const outcome = await memory.save('bench', SCOPE, {
    content: `${text(random, 40 + Math.floor(random() * 180))} (${i})`,
  });
  if (outcome.status !== 'saved')
    throw new Error(`the scope filled before ${ENTRIES} entries: ${outcome.status}`);
}

const base = { input: 'Deploy the release to staging.', model: { provider: 'replay' } };
const bodies = {
  none: { ...base, toolsets: ['base'] },
  skill: { ...base, toolsets: ['base', 'skill'] },
  both: { ...base, toolsets: ['base', 'memory', 'skill'], memory: { scope: SCOPE } },
};

let attempt = 0;
function contextFor(runId) {
  const fence = `${config.workerId}:lock-${++attempt}`;
  return {
    runId,
    attempt: 1,
    fence,
    config,
    store,
    log: silent,
    wakeSession: async () => {},
    skills,
    memory,
  };
}

/** One start, timed: claim and prepare of a new run (submitted, untimed); then the run is ended, untimed. */
async function start(kind) {
  const { run } = await runs.submit('bench', bodies[kind]);
  const ctx = contextFor(run.id);
  const started = await timedStart(ctx, kind);
  await store.finalize(run.id, { status: 'cancelled' }, ctx.fence);
  return started;
}

const results = await interleaved(['none', 'skill', 'both'], STARTS, WARMUP, start);
const times = Object.fromEntries(
  Object.entries(results).map(([kind, list]) => [kind, list.map((r) => r.startMs)]),
);
const lastSkill = results.skill.at(-1).prepared;
const lastBoth = results.both.at(-1).prepared.checkpoint.messages[0].content;
if (!lastBoth.includes('# Memory\n') || !/^- skill-\d+: /m.test(lastBoth))
  throw new Error('the run with both toolsets has no memory block or no skills index');
if (!lastSkill.skills || lastSkill.skills.entries.length !== SKILLS)
  throw new Error('the skill run had no skills');
const systemPrompt = lastSkill.checkpoint.messages[0].content;
const listed = (systemPrompt.match(/^- skill-\d+: /gm) ?? []).length;

// Where a skills start's time goes, each part on its own (median of STARTS).
const parts = { index: [], list: [], folder: [], prompt: [] };
for (let i = 0; i < STARTS; i++) {
  let begin = performance.now();
  const index = await indexes.current('bench');
  parts.index.push(performance.now() - begin);
  begin = performance.now();
  await skillStore.list('bench');
  parts.list.push(performance.now() - begin);
  begin = performance.now();
  await folders.folder('bench', index.version);
  parts.folder.push(performance.now() - begin);
  begin = performance.now();
  buildSystemPrompt({
    toolNames: [
      'bash',
      'read_file',
      'write_file',
      'list_dir',
      'patch',
      'read_skill',
      'read_skill_file',
      'skill_manage',
    ],
    locale: 'en',
    workspace: workspaces.dir,
    skills: { entries: index.skills, maxChars: config.skillsPromptChars, mountPath: '/run/skills' },
  });
  parts.prompt.push(performance.now() - begin);
}

// A change: the next start writes the new version's folder out (200 skills, 400 files), timed on its own.
const rebuilds = [];
for (let i = 0; i < 5; i++) {
  await skillStore.save('bench', { name: 'skill-000', mode: 'update', set: { 'notes.md': `change ${i}` } });
  const { version } = await skillStore.list('bench');
  const begin = performance.now();
  await folders.folder('bench', version);
  rebuilds.push(performance.now() - begin);
}

const noneMs = median(times.none);
const skillMs = median(times.skill);
const added = skillMs - noneMs;
const bothAdded = median(times.both) - noneMs;
console.log(
  JSON.stringify({
    bench: 'skills',
    skills: SKILLS,
    skills_kb: Math.round(skillBytes / 1024),
    prompt_chars: config.skillsPromptChars,
    listed_in_prompt: listed,
    starts: STARTS,
    no_skills_median_ms: ms(noneMs),
    skills_median_ms: ms(skillMs),
    added_median_ms: ms(added),
    memory_entries: ENTRIES,
    both_toolsets_median_ms: ms(median(times.both)),
    both_toolsets_added_median_ms: ms(bothAdded),
    no_skills_p90_ms: ms(percentile(times.none, 90)),
    skills_p90_ms: ms(percentile(times.skill, 90)),
    parts_median_ms: {
      index_current: ms(median(parts.index)),
      index_read_whole: ms(median(parts.list)),
      folder_current: ms(median(parts.folder)),
      system_prompt: ms(median(parts.prompt)),
    },
    folder_rebuild_median_ms: ms(median(rebuilds)),
    target_added_ms: TARGET_ADDED_MS,
    pass: added <= TARGET_ADDED_MS && bothAdded <= TARGET_ADDED_MS,
  }),
);
if (added > TARGET_ADDED_MS || bothAdded > TARGET_ADDED_MS) process.exitCode = 1;

await folders.close();
await runs.close();
redis.disconnect();
await redisServer.stop();
await workspaces.remove();
await cache.remove();
