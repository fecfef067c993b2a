/**
 * Checking a run's model spec against the server's configuration, without
 * making a provider: what the API needs at submit. Nothing here loads a
 * model SDK.
 */
import type { ModelSpec, ReplayScript } from '@tether/protocol';
import { AgentError } from '../errors.js';
import { knownNames, type ModelProfile } from './model-profiles.js';
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
  | { kind: 'replay'; script: ReplayScript }
  | { kind: 'profile'; profile: ModelProfile };

/**
 * Checks a run's model spec against the server's configuration without making
 * a provider (the API calls it to refuse a bad run when it is submitted).
 * Throws `ERR_MODEL_SPEC_INVALID` for a spec with anything but `profile` or
 * `provider: 'replay'` + `script`, `ERR_MODEL_PROFILE_UNKNOWN` (listing the
 * known profiles), `ERR_MODEL_PROFILE_REQUIRED`, `ERR_MODEL_REPLAY_DISABLED`,
 * or `ERR_MODEL_REPLAY_SCRIPT_INVALID`.
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
    refuseExtraKeys(given, ['provider', 'script']);
    if (!options.allowReplay) {
      throw new AgentError('ERR_MODEL_REPLAY_DISABLED', 'The replay provider is not enabled on this server.');
    }
    return { kind: 'replay', script: parseReplayScript(given.script) };
  }

  refuseExtraKeys(given, ['profile']);
  if (given.profile !== undefined && typeof given.profile !== 'string') invalid('profile must be a string');
  const name = (given.profile as string | undefined) ?? options.defaultProfile;
  if (name === undefined) {
    throw new AgentError(
      'ERR_MODEL_PROFILE_REQUIRED',
      `No model profile named and no default profile configured (${knownNames(options.profiles)}).`,
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
