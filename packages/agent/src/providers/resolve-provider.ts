/**
 * From a run's model spec to a provider. The spec comes from a client, so it
 * may only name a server profile or carry a replay script: a URL, key or model
 * name in it is refused, never used.
 */

import type { ModelSpec } from '@tether/protocol';
import type { ModelProfile } from './model-profiles.js';
import type { ModelProvider, ProviderLogger } from './model-provider.js';
import { checkModelSpec } from './model-spec.js';
import { createOpenAIProvider, type OpenAIProviderOptions } from './openai-provider.js';
import { playReplayScript, type ReplayProviderOptions } from './replay-provider.js';

export interface ResolveProviderOptions {
  profiles: readonly ModelProfile[];
  /** The profile of a run that names none. */
  defaultProfile?: string | undefined;
  /** Whether runs may use the replay provider (server configuration; off in production). */
  allowReplay: boolean;
  logger?: ProviderLogger | undefined;
  /** Retry tuning for every OpenAI provider made here (tests use tiny delays). */
  openai?: Pick<OpenAIProviderOptions, 'retryBaseDelayMs' | 'retryMaxDelayMs' | 'maxRetryWaitMs'> | undefined;
  replay?: ReplayProviderOptions | undefined;
}

/** The provider for a run; throws as {@link checkModelSpec} does. */
export function resolveProvider(spec: ModelSpec | undefined, options: ResolveProviderOptions): ModelProvider {
  const choice = checkModelSpec(spec, options);
  if (choice.kind === 'replay') return playReplayScript(choice.script, options.replay);
  const { profile } = choice;
  return createOpenAIProvider({
    ...options.openai,
    name: profile.name,
    baseURL: profile.baseURL,
    apiKey: profile.apiKey,
    model: profile.model,
    temperature: profile.temperature,
    maxOutputTokens: profile.maxOutputTokens,
    maxTokensField: profile.maxTokensField,
    timeoutMs: profile.timeoutMs,
    maxRetries: profile.maxRetries,
    logger: options.logger,
  });
}
