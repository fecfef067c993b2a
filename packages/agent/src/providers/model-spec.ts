/**
 * Checking a run's model spec against the server's configuration, without
 * making a provider: what the API needs at submit; and the spec a crew child
 * inherits. Nothing here loads a model SDK.
 */
import type { ModelSpec, ReplayChildren, ReplayScript } from '@tether/protocol';
import { AgentError } from '../errors.js';
import { knownNames, MODEL_SETUP_HINT, type ModelProfile } from './model-profiles.js';
import { parseReplayScript } from './replay-provider.js';

/** What {@link checkModelSpec} checks a spec against: the server's profiles and whether replay is on. */
export interface ModelSpecOptions {
  profiles: readonly ModelProfile[];
  /** The profile of a run that names none. */
  defaultProfile?: string | undefined;
  /** Whether runs may use the replay provider. */
  allowReplay: boolean;
}

/** What a valid model spec chooses. */
export type ModelChoice =
  | { kind: 'replay'; script: ReplayScript; children?: ReplayChildren }
  | { kind: 'profile'; profile: ModelProfile };

/**
 * Checks a run's model spec against the server's configuration without making
 * a provider (the API calls it to refuse a bad run when it is submitted).
 * Throws `ERR_MODEL_SPEC_INVALID` for a spec with anything but `profile` or
 * `provider: 'replay'` + `script` (+ its children's scripts, `children`),
 * `ERR_MODEL_PROFILE_UNKNOWN` (listing the known profiles),
 * `ERR_MODEL_PROFILE_REQUIRED`, `ERR_MODEL_REPLAY_DISABLED`, or
 * `ERR_MODEL_REPLAY_SCRIPT_INVALID` (naming the script and turn at fault).
 */
export function checkModelSpec(spec: ModelSpec | undefined, options: ModelSpecOptions): ModelChoice {
  const given: Record<string, unknown> = isRecord(spec)
    ? spec
    : spec === undefined
      ? {}
      : invalid('expected an object');

  if ('provider' in given) {
    if (given.provider !== 'replay') {
      invalid(`provider ${JSON.stringify(given.provider)} cannot be chosen by a run; name a profile instead`);
    }
    refuseExtraKeys(given, ['provider', 'script', 'children']);
    if (!options.allowReplay) {
      throw new AgentError('ERR_MODEL_REPLAY_DISABLED', 'The replay provider is not enabled on this server.');
    }
    const script = parseReplayScript(given.script);
    if (given.children === undefined) return { kind: 'replay', script };
    return { kind: 'replay', script, children: parseReplayChildren(given.children, 'children') };
  }

  refuseExtraKeys(given, ['profile']);
  if (given.profile !== undefined && typeof given.profile !== 'string') invalid('profile must be a string');
  const name = (given.profile as string | undefined) ?? options.defaultProfile;
  if (name === undefined) {
    throw new AgentError(
      'ERR_MODEL_PROFILE_REQUIRED',
      options.profiles.length === 0
        ? `No model is configured on this server: ${MODEL_SETUP_HINT}.`
        : `No model profile named and no default profile configured (${knownNames(options.profiles)}).`,
    );
  }
  const profile = options.profiles.find((candidate) => candidate.name === name);
  if (!profile) {
    throw new AgentError(
      'ERR_MODEL_PROFILE_UNKNOWN',
      `Unknown model profile "${name}" (${knownNames(options.profiles)}).`,
    );
  }
  return { kind: 'profile', profile };
}

/** Most entries one `children` list may hold (as `ReplayChildrenSchema`). */
const MAX_CHILD_SCRIPTS = 64;
/** Longest `match` (as `ReplayChildrenSchema`). */
const MAX_MATCH_CHARS = 1_000;

/**
 * Checks a replay spec's `children` (see `ReplayChildrenSchema`), entry by
 * entry and level by level, so a message names the script at fault
 * (`children[1].children[0].script`) and, through `parseReplayScript`, its turn.
 */
function parseReplayChildren(input: unknown, where: string): ReplayChildren {
  const fail = (message: string): never => {
    throw new AgentError('ERR_MODEL_REPLAY_SCRIPT_INVALID', `Invalid replay script: ${where}: ${message}`);
  };
  if (!Array.isArray(input)) return fail('expected an array of { match?, script, children? }');
  if (input.length < 1 || input.length > MAX_CHILD_SCRIPTS) {
    return fail(`it has ${input.length} entries (1 to ${MAX_CHILD_SCRIPTS})`);
  }
  return input.map((entry: unknown, index) => {
    const at = `${where}[${index}]`;
    if (!isRecord(entry)) {
      throw new AgentError(
        'ERR_MODEL_REPLAY_SCRIPT_INVALID',
        `Invalid replay script: ${at}: expected an object`,
      );
    }
    const extra = Object.keys(entry).filter((key) => !['match', 'script', 'children'].includes(key));
    const match = entry.match;
    const problem =
      extra.length > 0
        ? `unexpected field(s) ${extra.join(', ')} (an entry is { match?, script, children? })`
        : match !== undefined &&
            (typeof match !== 'string' || match.length < 1 || match.length > MAX_MATCH_CHARS)
          ? `match must be a string of 1 to ${MAX_MATCH_CHARS} characters`
          : undefined;
    if (problem !== undefined) {
      throw new AgentError('ERR_MODEL_REPLAY_SCRIPT_INVALID', `Invalid replay script: ${at}: ${problem}`);
    }
    let script: ReplayScript;
    try {
      script = parseReplayScript(entry.script);
    } catch (error) {
      const message = error instanceof Error ? error.message.replace(/^Invalid replay script: /, '') : '';
      throw new AgentError(
        'ERR_MODEL_REPLAY_SCRIPT_INVALID',
        `Invalid replay script: ${at}.script: ${message}`,
        {
          cause: error,
        },
      );
    }
    return {
      ...(match === undefined ? {} : { match: match as string }),
      script,
      ...(entry.children === undefined
        ? {}
        : { children: parseReplayChildren(entry.children, `${at}.children`) }),
    };
  });
}

/**
 * The model spec of a crew child whose goal is `goal`: a profile spec (or
 * none) is inherited as it is; a replay spec gives the script of the first
 * `children` entry whose `match` is part of the goal (an entry without `match`
 * matches every goal), with that entry's own `children` for the child's
 * children.
 * @throws AgentError `ERR_MODEL_REPLAY_NO_CHILD_SCRIPT` when a replay spec has
 *   no entry for the goal (or no `children`), naming the goal
 */
export function childModelSpec(parent: ModelSpec | undefined, goal: string): ModelSpec | undefined {
  if (parent === undefined || !('provider' in parent)) return parent;
  const entry = parent.children?.find(
    (candidate) => candidate.match === undefined || goal.includes(candidate.match),
  );
  if (entry === undefined) {
    const shown = goal.length > 200 ? `${goal.slice(0, 200)}...` : goal;
    throw new AgentError(
      'ERR_MODEL_REPLAY_NO_CHILD_SCRIPT',
      parent.children === undefined
        ? `The replay run has no children scripts, so it cannot delegate the goal ${JSON.stringify(shown)}. Give its model spec children: [{ match?, script }].`
        : `No children script of the replay run matches the goal ${JSON.stringify(shown)}: none of their match strings is part of it. Add an entry whose match is, or one without match.`,
    );
  }
  return {
    provider: 'replay',
    script: entry.script,
    ...(entry.children === undefined ? {} : { children: entry.children }),
  };
}

function refuseExtraKeys(spec: Record<string, unknown>, allowed: readonly string[]): void {
  const extra = Object.keys(spec).filter((key) => !allowed.includes(key));
  if (extra.length > 0) {
    invalid(
      `unexpected field(s) ${extra.join(', ')}; a run names a server profile (or a replay script), never a URL, key or model`,
    );
  }
}

function invalid(message: string): never {
  throw new AgentError('ERR_MODEL_SPEC_INVALID', `Invalid model spec: ${message}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
