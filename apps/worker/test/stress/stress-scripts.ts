import type { ClientTool, ReplayChildren, ReplayScript, ReplayTurn } from '@tether/protocol';
import type { StoredBody } from '@tether/store/runs';
import { call } from '../harness.js';
import type { SeededRandom } from './seeded-random.js';

/** What a stress run's replay script does. */
export const RUN_KINDS = ['plain', 'bash', 'clarify', 'tools', 'crew', 'mixed'] as const;
export type RunKind = (typeof RUN_KINDS)[number];

/** How often each kind is submitted. */
export const RUN_KIND_WEIGHTS: Readonly<Record<RunKind, number>> = {
  plain: 12,
  bash: 18,
  clarify: 20,
  tools: 20,
  crew: 15,
  mixed: 15,
};

/** The client tool of the `tools` and `mixed` runs. */
const LOOKUP: ClientTool = {
  name: 'lookup',
  description: 'Looks a key up on the client',
  parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
};

/**
 * The crew children's scripts, by a word of their goal: `quick` answers, `shell` runs a short
 * command, `slow` runs past the workers' crew child timeout (its parent times it out).
 */
const CHILDREN: ReplayChildren = [
  { match: 'quick', script: [{ content: 'quick child done' }] },
  {
    match: 'shell',
    script: [
      { toolCalls: [call('bash', { command: 'sleep 0.4; echo child' })] },
      { content: 'shell child done' },
    ],
  },
  {
    match: 'slow',
    script: [{ toolCalls: [call('bash', { command: 'sleep 9' })] }, { content: 'slow child done' }],
  },
];

/** The crew child timeout the workers of a stress run get (ms): `slow` children run past it. */
export const CREW_CHILD_TIMEOUT_MS = 6_000;

const bash = (rng: SeededRandom): ReplayTurn => ({
  toolCalls: [call('bash', { command: `sleep 0.${rng.between(1, 9)}; echo step` })],
});
const clarify = (): ReplayTurn => ({
  toolCalls: [call('clarify', { question: 'Which way?', choices: ['left', 'right'] })],
});
const lookups = (rng: SeededRandom): ReplayTurn => ({
  toolCalls: Array.from({ length: rng.between(1, 2) }, (_, i) => call('lookup', { key: `k${i}` })),
});

/**
 * The body of a run of `kind`, its waits drawn from `rng`: a question's and a client tool call's
 * deadline between 1 and 8 s (some pass before anybody answers), a delegation of one to three
 * children of random goals.
 */
export function runBody(kind: RunKind, rng: SeededRandom, input: string): StoredBody {
  const waitMs = rng.between(1_000, 8_000);
  const done: ReplayTurn = { content: `${kind} done` };
  const body = (script: ReplayScript, extra: Partial<StoredBody> = {}): StoredBody => ({
    input,
    model: { provider: 'replay', script },
    ...extra,
  });
  switch (kind) {
    case 'plain':
      return body([done]);
    case 'bash':
      return body([bash(rng), done]);
    case 'clarify':
      return body([clarify(), done], { clarify: { timeoutMs: waitMs } });
    case 'tools':
      return body([lookups(rng), done], { tools: [LOOKUP], toolTimeoutMs: waitMs });
    case 'mixed':
      return body([bash(rng), clarify(), lookups(rng), bash(rng), done], {
        clarify: { timeoutMs: waitMs },
        tools: [LOOKUP],
        toolTimeoutMs: waitMs,
      });
    case 'crew': {
      const tasks = Array.from({ length: rng.between(1, 3) }, (_, i) => ({
        goal: `${rng.weighted({ quick: 5, shell: 4, slow: 1 })} task ${i}`,
      }));
      const ask = rng.chance(0.3);
      return {
        input,
        toolsets: ['base', 'interaction', 'crew'],
        clarify: { timeoutMs: waitMs },
        model: {
          provider: 'replay',
          script: [...(ask ? [clarify()] : []), { toolCalls: [call('delegate_parallel', { tasks })] }, done],
          children: CHILDREN,
        },
      };
    }
  }
}
