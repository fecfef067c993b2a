import { type AgentError, isAgentError } from '../errors.js';
import type { ModelProvider, ModelResponse } from './model-provider.js';

/**
 * Model fallback: a profile's `fallbacks` are the profiles a turn goes to, in order, when it
 * fails in a way its own retries did not fix: rate limited past its retries, unavailable (5xx),
 * unreachable, timed out, or a broken answer. A request the model refused (bad request, auth) or a
 * cancelled one is not sent elsewhere. The transcript is the loop's own, provider-neutral, so the
 * next profile (OpenAI-compatible or Anthropic) continues the same history.
 *
 * A per-process breaker remembers a profile that failed so: for `openMs` its turns skip it (and
 * say so), then it is tried first again, and an answer closes it.
 */

const FALLBACK_CODES = new Set([
  'ERR_MODEL_RATE_LIMITED',
  'ERR_MODEL_UNAVAILABLE',
  'ERR_MODEL_CONNECTION',
  'ERR_MODEL_TIMEOUT',
  'ERR_MODEL_BAD_RESPONSE',
]);

/** The profiles that failed recently, until when (epoch ms). */
export class ProfileBreaker {
  readonly #openUntil = new Map<string, number>();
  /** How long a profile that failed is skipped (ms): a worker sets it from `TETHER_MODEL_BREAKER_MS`. */
  openMs: number;
  constructor(openMs = 30_000) {
    this.openMs = openMs;
  }

  isOpen(profile: string, now = Date.now()): boolean {
    return (this.#openUntil.get(profile) ?? 0) > now;
  }

  trip(profile: string, now = Date.now()): void {
    this.#openUntil.set(profile, now + this.openMs);
  }

  close(profile: string): void {
    this.#openUntil.delete(profile);
  }
}

/** The breaker a worker's turns share when none is given. */
export const PROCESS_BREAKER = new ProfileBreaker();

/**
 * A provider that asks `chain[0]` (the run's profile) and, on a failure a fallback may fix, the
 * next profiles of the chain in order; `onFallback` tells each move. The response names the
 * profile that answered, with its prices.
 */
export function createFallbackProvider(
  chain: readonly ModelProvider[],
  breaker: ProfileBreaker = PROCESS_BREAKER,
): ModelProvider {
  const [first] = chain;
  if (!first) throw new RangeError('a fallback chain needs at least one provider');
  // A turn may go to any profile of the chain: the smallest window known is the one to fit.
  const windows = chain.flatMap((provider) =>
    provider.contextWindow === undefined ? [] : [provider.contextWindow],
  );
  return {
    name: first.name,
    model: first.model,
    prices: first.prices,
    ...(windows.length > 0 ? { contextWindow: Math.min(...windows) } : {}),
    ...(first.compactAt === undefined ? {} : { compactAt: first.compactAt }),
    async complete(request): Promise<ModelResponse> {
      // Profiles whose breaker is open are skipped, unless every one is: then all are tried.
      const healthy = chain.filter((provider) => !breaker.isOpen(provider.name));
      const order = healthy.length > 0 ? healthy : chain;
      if (order[0] !== first) {
        request.onFallback?.({
          from: first.name,
          to: (order[0] as ModelProvider).name,
          reason: `profile ${first.name} failed recently: skipped for up to ${Math.round(breaker.openMs / 1000)} s`,
        });
      }
      let failure: AgentError | undefined;
      for (const [index, provider] of order.entries()) {
        const previous = order[index - 1];
        if (previous && failure) {
          request.onFallback?.({
            from: previous.name,
            to: provider.name,
            reason: `${failure.code}: ${failure.message}`,
          });
        }
        try {
          const response = await provider.complete(request);
          breaker.close(provider.name);
          return {
            ...response,
            model: response.model ?? provider.model,
            profile: provider.name,
            prices: provider.prices,
          };
        } catch (error) {
          if (!isAgentError(error) || !FALLBACK_CODES.has(error.code) || request.signal.aborted) throw error;
          breaker.trip(provider.name);
          failure = error;
        }
      }
      throw failure as AgentError;
    },
  };
}
