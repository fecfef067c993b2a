/**
 * Model profiles: server configuration that says which model server to call
 * and how (base URL, key, model, defaults). A run only ever names a profile,
 * so a client can never point the server at a URL or supply a key.
 */
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { AgentError } from '../errors.js';

export const ModelProfileSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' }),
    provider: Type.Literal('openai'),
    baseURL: Type.String({ minLength: 1, maxLength: 2_000, pattern: '^https?://' }),
    apiKey: Type.Optional(Type.String({ minLength: 1 })),
    model: Type.String({ minLength: 1, maxLength: 200 }),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    maxOutputTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
    /** Which body field carries the token limit (see `OpenAIProviderOptions`). */
    maxTokensField: Type.Optional(
      Type.Union([Type.Literal('max_tokens'), Type.Literal('max_completion_tokens')]),
    ),
    timeoutMs: Type.Integer({ minimum: 1_000, maximum: 3_600_000, default: 120_000 }),
    maxRetries: Type.Integer({ minimum: 0, maximum: 20, default: 4 }),
  },
  { additionalProperties: false },
);

/** A profile with its defaults applied. */
export type ModelProfile = Static<typeof ModelProfileSchema>;

/** A profile as written in configuration: `timeoutMs` and `maxRetries` may be left out. */
export type ModelProfileInput = Omit<ModelProfile, 'timeoutMs' | 'maxRetries'> &
  Partial<Pick<ModelProfile, 'timeoutMs' | 'maxRetries'>>;

/**
 * Validates a list of profiles (parsed JSON), applies the defaults and returns
 * them frozen. Throws `ERR_MODEL_PROFILE_INVALID` naming the profile, the
 * field and the bound; names must be unique.
 */
export function parseModelProfiles(input: unknown, source = 'model profiles'): readonly ModelProfile[] {
  const fail = (message: string): never => {
    throw new AgentError('ERR_MODEL_PROFILE_INVALID', `${source}: ${message}`);
  };
  if (!Array.isArray(input)) return fail('expected a JSON array of profiles');
  const seen = new Set<string>();
  const profiles = input.map((raw: unknown, index): ModelProfile => {
    const label =
      isRecord(raw) && typeof raw.name === 'string'
        ? `profile ${index} (${JSON.stringify(raw.name)})`
        : `profile ${index}`;
    if (!isRecord(raw)) return fail(`${label}: expected an object`);
    const profile = Value.Default(ModelProfileSchema, structuredClone(raw));
    const error = Value.Errors(ModelProfileSchema, profile).First();
    if (error) {
      const field = error.path === '' ? '' : ` ${error.path.slice(1).replaceAll('/', '.')}:`;
      // Never echo a key, even a malformed one.
      const shown =
        error.value === undefined || error.path === '/apiKey' ? '' : ` (got ${JSON.stringify(error.value)})`;
      return fail(`${label}:${field} ${error.message}${shown}`);
    }
    const valid = profile as ModelProfile;
    if (seen.has(valid.name)) fail(`${label}: the name "${valid.name}" is used twice`);
    seen.add(valid.name);
    return Object.freeze(valid);
  });
  return Object.freeze(profiles);
}

/** The profiles a worker builds from its environment, and which one runs get by default. */
export interface EnvModelProfiles {
  profiles: readonly ModelProfile[];
  defaultProfile: string | undefined;
}

/** The name of the profile built from `OPENAI_*` and `TETHER_MODEL`. */
export const ENV_PROFILE_NAME = 'default';

/**
 * Model profiles from environment variables, for the one module that reads
 * `process.env` (the worker's and API's config) to call:
 *
 * - `TETHER_MODEL_PROFILES`: a JSON array of profiles.
 * - `TETHER_MODEL` (with `OPENAI_API_KEY`, `OPENAI_BASE_URL`, default
 *   `https://api.openai.com/v1`): one more profile, named `default`.
 *   `OPENAI_API_KEY` or `OPENAI_BASE_URL` without `TETHER_MODEL` is an error:
 *   no model name is guessed.
 * - `TETHER_DEFAULT_MODEL_PROFILE`: the profile of runs that name none; else
 *   `default` when it was built, else the first of `TETHER_MODEL_PROFILES`.
 */
export function profilesFromEnv(env: Readonly<Record<string, string | undefined>>): EnvModelProfiles {
  const value = (name: string) => {
    const raw = env[name]?.trim();
    return raw === '' ? undefined : raw;
  };
  const fail = (message: string): never => {
    throw new AgentError('ERR_MODEL_PROFILE_INVALID', message);
  };

  let listed: readonly ModelProfile[] = [];
  const json = value('TETHER_MODEL_PROFILES');
  if (json !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch (error) {
      fail(`TETHER_MODEL_PROFILES is not valid JSON: ${(error as Error).message}`);
    }
    listed = parseModelProfiles(parsed, 'TETHER_MODEL_PROFILES');
  }

  const model = value('TETHER_MODEL');
  const apiKey = value('OPENAI_API_KEY');
  const baseURL = value('OPENAI_BASE_URL');
  const profiles = [...listed];
  if (model === undefined) {
    if (apiKey !== undefined || baseURL !== undefined) {
      fail(
        'OPENAI_API_KEY or OPENAI_BASE_URL is set but TETHER_MODEL is not: set TETHER_MODEL to the model name',
      );
    }
  } else {
    if (listed.some((profile) => profile.name === ENV_PROFILE_NAME)) {
      fail(
        `TETHER_MODEL builds a profile named "${ENV_PROFILE_NAME}", but TETHER_MODEL_PROFILES already has one`,
      );
    }
    const input: Record<string, unknown> = {
      name: ENV_PROFILE_NAME,
      provider: 'openai',
      baseURL: baseURL ?? 'https://api.openai.com/v1',
      model,
      ...(apiKey === undefined ? {} : { apiKey }),
    };
    const [profile] = parseModelProfiles([input], 'TETHER_MODEL / OPENAI_BASE_URL / OPENAI_API_KEY');
    if (profile) profiles.push(profile);
  }

  const named = value('TETHER_DEFAULT_MODEL_PROFILE');
  if (named !== undefined && !profiles.some((profile) => profile.name === named)) {
    fail(`TETHER_DEFAULT_MODEL_PROFILE names "${named}", which is not a profile (${knownNames(profiles)})`);
  }
  const defaultProfile = named ?? (model !== undefined ? ENV_PROFILE_NAME : listed[0]?.name);
  return { profiles: Object.freeze(profiles), defaultProfile };
}

/** The profile names, for error messages. */
export function knownNames(profiles: readonly ModelProfile[]): string {
  return profiles.length === 0 ? 'none configured' : `known: ${profiles.map((p) => p.name).join(', ')}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `profilesFromEnv` for a configuration loader that collects every problem
 * before failing: an invalid setting is reported to `report`, and no profiles
 * are returned.
 */
export function readProfilesFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  report: (problem: string) => void,
): EnvModelProfiles {
  try {
    return profilesFromEnv(env);
  } catch (error) {
    report(error instanceof Error ? error.message : String(error));
    return { profiles: [], defaultProfile: undefined };
  }
}
