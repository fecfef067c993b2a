/**
 * Model profiles: server configuration that says which model server to call
 * and how (base URL, key, model, defaults). A run only ever names a profile,
 * so a client can never point the server at a URL or supply a key.
 */
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { AgentError } from '../errors.js';

/** The wire formats a profile may speak. */
export const MODEL_PROVIDERS = ['openai', 'anthropic'] as const;
export type ModelProviderKind = (typeof MODEL_PROVIDERS)[number];

/** Each provider's API root when a profile gives none. */
export const DEFAULT_BASE_URLS: Readonly<Record<ModelProviderKind, string>> = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
};

/**
 * The model a profile without one gets: Anthropic's, and for an
 * OpenAI-compatible profile the one of the service its base URL names (OpenAI,
 * DeepSeek, Qwen on DashScope). Another OpenAI-compatible server (Ollama, vLLM,
 * llama.cpp…) gets none here: its provider asks it for the models it serves
 * and takes the first (see `OpenAIProviderOptions.model`).
 */
export const DEFAULT_MODELS = {
  anthropic: 'claude-sonnet-5-5',
  openai: 'gpt-5.4-mini',
  /** By the host of an OpenAI-compatible base URL. */
  byHost: {
    'api.openai.com': 'gpt-5.4-mini',
    'api.deepseek.com': 'deepseek-chat',
    'dashscope.aliyuncs.com': 'qwen-plus',
    'dashscope-intl.aliyuncs.com': 'qwen-plus',
  } as Readonly<Record<string, string>>,
} as const;

/** The model a profile of `provider` at `baseURL` gets when it names none (see {@link DEFAULT_MODELS}). */
export function defaultModel(provider: ModelProviderKind, baseURL: string): string | undefined {
  if (provider === 'anthropic') return DEFAULT_MODELS.anthropic;
  let host: string;
  try {
    host = new URL(baseURL).hostname;
  } catch {
    return undefined;
  }
  return DEFAULT_MODELS.byHost[host];
}

/** US dollars per million tokens. */
const price = Type.Number({ minimum: 0, maximum: 100_000 });
export const ModelPricesSchema = Type.Object(
  { input: price, output: price, cachedInput: Type.Optional(price) },
  { additionalProperties: false },
);
export type ModelPrices = Static<typeof ModelPricesSchema>;

export const ModelProfileSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' }),
    provider: Type.Union(MODEL_PROVIDERS.map((provider) => Type.Literal(provider))),
    /** Default: the provider's ({@link DEFAULT_BASE_URLS}). */
    baseURL: Type.Optional(Type.String({ minLength: 1, maxLength: 2_000, pattern: '^https?://' })),
    apiKey: Type.Optional(Type.String({ minLength: 1 })),
    /** Default: {@link defaultModel}; none for an OpenAI-compatible server it does not know. */
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    /** OpenAI-compatible profiles only: the Messages API has no temperature. */
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    maxOutputTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
    /** Which body field carries the token limit (see `OpenAIProviderOptions`); OpenAI-compatible profiles only. */
    maxTokensField: Type.Optional(
      Type.Union([Type.Literal('max_tokens'), Type.Literal('max_completion_tokens')]),
    ),
    /**
     * What the model's tokens cost, in US dollars per million (`cachedInput`: input read from the
     * prompt cache; `input` when absent): a run's `usage.costUsd`, and its `limits.maxCostUsd`.
     */
    prices: Type.Optional(ModelPricesSchema),
    /**
     * Other profiles a turn goes to, in order, when this one fails in a way its retries did not
     * fix (rate limited, unavailable, unreachable, timed out): across providers too.
     */
    fallbacks: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 8, uniqueItems: true }),
    ),
    /**
     * Tokens the model's context holds: runs compact their transcript past `compactAt` of it.
     * Default: the model family's (`CONTEXT_WINDOWS`), else what the server lists, else learnt
     * from its first refusal of a request as too long.
     */
    contextWindow: Type.Optional(Type.Integer({ minimum: 1_000, maximum: 100_000_000 })),
    /** Share of the context window past which a run's transcript is compacted. Default 0.8. */
    compactAt: Type.Optional(Type.Number({ minimum: 0.2, maximum: 0.95 })),
    timeoutMs: Type.Integer({ minimum: 1_000, maximum: 3_600_000, default: 120_000 }),
    maxRetries: Type.Integer({ minimum: 0, maximum: 20, default: 4 }),
  },
  { additionalProperties: false },
);

/**
 * A profile with its defaults applied: it always has a base URL, and a model
 * unless it is an OpenAI-compatible server's whose models are asked for.
 */
export type ModelProfile = Omit<Static<typeof ModelProfileSchema>, 'baseURL'> & { baseURL: string };

/** A profile as written in configuration: `timeoutMs` and `maxRetries` may be left out. */
export type ModelProfileInput = Omit<Static<typeof ModelProfileSchema>, 'timeoutMs' | 'maxRetries'> &
  Partial<Pick<ModelProfile, 'timeoutMs' | 'maxRetries'>>;

/**
 * Validates a list of profiles (parsed JSON), applies the defaults (timeout,
 * retries, the provider's base URL and model) and returns them frozen. Throws
 * `ERR_MODEL_PROFILE_INVALID` naming the profile, the field and the bound;
 * names must be unique.
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
    const valid = profile as Static<typeof ModelProfileSchema>;
    if (valid.provider === 'anthropic') {
      for (const field of ['temperature', 'maxTokensField'] as const) {
        if (valid[field] !== undefined) {
          fail(
            `${label}: ${field} is for OpenAI-compatible profiles; the Messages API has no such parameter`,
          );
        }
      }
    }
    if (seen.has(valid.name)) fail(`${label}: the name "${valid.name}" is used twice`);
    seen.add(valid.name);
    const baseURL = valid.baseURL ?? DEFAULT_BASE_URLS[valid.provider];
    const model = valid.model ?? defaultModel(valid.provider, baseURL);
    return Object.freeze({ ...valid, baseURL, ...(model === undefined ? {} : { model }) });
  });
  for (const profile of profiles) {
    for (const name of profile.fallbacks ?? []) {
      if (name === profile.name) fail(`profile "${profile.name}": fallbacks names the profile itself`);
      if (!seen.has(name)) fail(`profile "${profile.name}": fallbacks names no profile "${name}"`);
    }
  }
  return Object.freeze(profiles);
}

/** The profiles a worker builds from its environment, and which one runs get by default. */
export interface EnvModelProfiles {
  profiles: readonly ModelProfile[];
  defaultProfile: string | undefined;
}

/** The name of the profile built from `OPENAI_*` or `ANTHROPIC_*` (and `TETHER_MODEL`). */
export const ENV_PROFILE_NAME = 'default';

/**
 * How to give a server a model, for a message that says there is none: the
 * variables, named. (`pnpm start` says it at more length.)
 */
export const MODEL_SETUP_HINT =
  'set OPENAI_API_KEY (OpenAI), OPENAI_BASE_URL (an OpenAI-compatible server: Ollama, vLLM, DeepSeek, Qwen; with OPENAI_API_KEY if it needs one) or ANTHROPIC_API_KEY (Anthropic) where the API and the workers run, and restart them';

/**
 * Model profiles from environment variables, for the one module that reads
 * `process.env` (the worker's and API's config) to call:
 *
 * - `TETHER_MODEL_PROFILES`: a JSON array of profiles.
 * - One more profile, named `default`, from the usual variables of one
 *   provider: OpenAI's (`OPENAI_API_KEY`, `OPENAI_BASE_URL`) when either is
 *   set, else Anthropic's (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`) when
 *   either is: with both providers' variables set, OpenAI's come first, unless
 *   `TETHER_MODEL_PROVIDER` (`openai` or `anthropic`) chooses. Its model is
 *   `TETHER_MODEL`, else the provider's default (see {@link defaultModel}).
 *   `TETHER_MODEL` alone makes an OpenAI profile (with no key).
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

  // Each provider's usual variables.
  const given: ProviderVariables = {
    openai: { key: value('OPENAI_API_KEY'), baseURL: value('OPENAI_BASE_URL') },
    anthropic: { key: value('ANTHROPIC_API_KEY'), baseURL: value('ANTHROPIC_BASE_URL') },
  };
  const model = value('TETHER_MODEL');
  const provider = envProvider(given, value('TETHER_MODEL_PROVIDER'), model !== undefined, fail);
  const profiles = [...listed];
  if (provider !== undefined) {
    if (listed.some((profile) => profile.name === ENV_PROFILE_NAME)) {
      fail(
        `${ENV_VARIABLES[provider].key} (or TETHER_MODEL) builds a profile named "${ENV_PROFILE_NAME}", but TETHER_MODEL_PROFILES already has one`,
      );
    }
    const names = ENV_VARIABLES[provider];
    const { key: apiKey, baseURL } = given[provider];
    const input: Record<string, unknown> = {
      name: ENV_PROFILE_NAME,
      provider,
      baseURL: baseURL ?? DEFAULT_BASE_URLS[provider],
      ...(model === undefined ? {} : { model }),
      ...(apiKey === undefined ? {} : { apiKey }),
    };
    const [profile] = parseModelProfiles([input], `TETHER_MODEL / ${names.baseURL} / ${names.key}`);
    if (profile) profiles.push(profile);
  }

  const named = value('TETHER_DEFAULT_MODEL_PROFILE');
  if (named !== undefined && !profiles.some((profile) => profile.name === named)) {
    fail(`TETHER_DEFAULT_MODEL_PROFILE names "${named}", which is not a profile (${knownNames(profiles)})`);
  }
  const defaultProfile = named ?? (provider !== undefined ? ENV_PROFILE_NAME : listed[0]?.name);
  return { profiles: Object.freeze(profiles), defaultProfile };
}

/** The names of each provider's usual variables. */
const ENV_VARIABLES: Readonly<Record<ModelProviderKind, { key: string; baseURL: string }>> = {
  openai: { key: 'OPENAI_API_KEY', baseURL: 'OPENAI_BASE_URL' },
  anthropic: { key: 'ANTHROPIC_API_KEY', baseURL: 'ANTHROPIC_BASE_URL' },
};

/** The values of each provider's usual variables. */
type ProviderVariables = Record<ModelProviderKind, { key: string | undefined; baseURL: string | undefined }>;

/** Which provider the `default` profile is built for, if any (see {@link profilesFromEnv}). */
function envProvider(
  given: ProviderVariables,
  chosen: string | undefined,
  modelGiven: boolean,
  fail: (message: string) => never,
): ModelProviderKind | undefined {
  const isSet = (provider: ModelProviderKind) =>
    given[provider].key !== undefined || given[provider].baseURL !== undefined;
  if (chosen !== undefined) {
    if (!(MODEL_PROVIDERS as readonly string[]).includes(chosen)) {
      fail(
        `TETHER_MODEL_PROVIDER must be one of ${MODEL_PROVIDERS.join(', ')} (got ${JSON.stringify(chosen)})`,
      );
    }
    const provider = chosen as ModelProviderKind;
    if (!isSet(provider)) {
      const names = ENV_VARIABLES[provider];
      fail(`TETHER_MODEL_PROVIDER is ${provider}, but neither ${names.key} nor ${names.baseURL} is set`);
    }
    return provider;
  }
  if (isSet('openai')) return 'openai';
  if (isSet('anthropic')) return 'anthropic';
  return modelGiven ? 'openai' : undefined;
}

/**
 * One line on a profile for a person (`pnpm start`'s banner): its name,
 * provider, model and server, never its key:
 * `"default": anthropic, claude-sonnet-5-5 at https://api.anthropic.com`.
 */
export function describeProfile(profile: ModelProfile): string {
  const model = profile.model ?? 'the first model the server lists (TETHER_MODEL to choose)';
  return `"${profile.name}": ${profile.provider}, ${model} at ${shownURL(profile.baseURL)}`;
}

/** A URL without the user and password it may carry. */
function shownURL(raw: string): string {
  try {
    const url = new URL(raw);
    url.username = '';
    url.password = '';
    return url.toString().replace(/\/$/, '');
  } catch {
    return raw;
  }
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
