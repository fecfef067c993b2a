/**
 * From a run's model spec to a provider. The spec comes from a client, so it
 * may only name a server profile or carry a replay script: a URL, key or model
 * name in it is refused, never used.
 */

import type { ModelSpec } from '@tether/protocol';
import { familyContextWindow } from '../attempt/compaction.js';
import { createAnthropicProvider } from './anthropic-provider.js';
import { createFallbackProvider, type ProfileBreaker } from './fallback-provider.js';
import type { ModelProfile } from './model-profiles.js';
import type { ModelProvider, ProviderLogger } from './model-provider.js';
import { checkModelSpec } from './model-spec.js';
import { createOpenAIProvider } from './openai-provider.js';
import { playReplayScript, type ReplayProviderOptions } from './replay-provider.js';
import type { StreamingProviderOptions } from './streamed-request.js';

export interface ResolveProviderOptions {
  profiles: readonly ModelProfile[];
  /** The profile of a run that names none. */
  defaultProfile?: string | undefined;
  /** Whether runs may use the replay provider (server configuration; off in production). */
  allowReplay: boolean;
  logger?: ProviderLogger | undefined;
  /** Retry tuning for every OpenAI or Anthropic provider made here (tests use tiny delays). */
  retry?:
    | Pick<StreamingProviderOptions, 'retryBaseDelayMs' | 'retryMaxDelayMs' | 'maxRetryWaitMs'>
    | undefined;
  replay?: ReplayProviderOptions | undefined;
  /** The breaker of profiles with fallbacks: the process's own unless given (tests give theirs). */
  breaker?: ProfileBreaker | undefined;
}

/** The provider for a run; throws as {@link checkModelSpec} does. */
export function resolveProvider(spec: ModelSpec | undefined, options: ResolveProviderOptions): ModelProvider {
  const choice = checkModelSpec(spec, options);
  if (choice.kind === 'replay') return playReplayScript(choice.script, options.replay);
  const { profile } = choice;
  const chain = [
    profile,
    ...(profile.fallbacks ?? []).flatMap((name) => options.profiles.filter((p) => p.name === name)),
  ];
  const providers = chain.map((each) => {
    const window = each.contextWindow ?? familyContextWindow(each.model);
    return Object.assign(providerOf(each, options), {
      ...(each.prices ? { prices: each.prices } : {}),
      ...(window === undefined ? {} : { contextWindow: window }),
      ...(each.compactAt === undefined ? {} : { compactAt: each.compactAt }),
    });
  });
  return providers.length > 1
    ? createFallbackProvider(providers, options.breaker)
    : (providers[0] as ModelProvider);
}

function providerOf(profile: ModelProfile, options: ResolveProviderOptions): ModelProvider {
  const common = {
    ...options.retry,
    name: profile.name,
    baseURL: profile.baseURL,
    apiKey: profile.apiKey,
    maxOutputTokens: profile.maxOutputTokens,
    timeoutMs: profile.timeoutMs,
    maxRetries: profile.maxRetries,
    logger: options.logger,
  };
  switch (profile.provider) {
    case 'anthropic':
      // A profile's model is always set for Anthropic (parseModelProfiles gives the default).
      return createAnthropicProvider({ ...common, model: profile.model ?? '' });
    case 'openai':
      return createOpenAIProvider({
        ...common,
        model: profile.model,
        temperature: profile.temperature,
        maxTokensField: profile.maxTokensField,
      });
  }
}
