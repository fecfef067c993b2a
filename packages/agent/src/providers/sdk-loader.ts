import { AgentError } from '../errors.js';
import type { SdkErrors } from './streamed-request.js';

/**
 * A provider's SDK, loaded on the provider's first model turn rather than
 * when its module is: an SDK takes a while to load, on every worker start
 * otherwise, and a worker that never runs one of its profiles never needs it.
 * The package is imported once per process, whatever the number of profiles.
 */
export class SdkLoader<Sdk> {
  readonly #packageName: string;
  readonly #import: () => Promise<Sdk>;
  #sdk: Promise<Sdk> | undefined;

  /** `load` imports `packageName` (`() => import('openai')`, so that the import stays typed). */
  constructor(packageName: string, load: () => Promise<Sdk>) {
    this.#packageName = packageName;
    this.#import = load;
  }

  /**
   * What one provider builds from the SDK (its client, its error classes), made
   * on the first call and kept. An SDK that cannot be loaded is
   * `ERR_AGENT_INTERNAL`, naming the provider (`name`) and the package.
   */
  prepare<T>(name: string, build: (sdk: Sdk) => T): () => Promise<T> {
    let ready: Promise<T> | undefined;
    const load = async (): Promise<T> => {
      this.#sdk ??= this.#import();
      const sdk = await this.#sdk.catch((error: unknown) => {
        const message = `${name}: cannot load ${this.#packageName}: ${String(error)}`;
        throw new AgentError('ERR_AGENT_INTERNAL', message, { cause: error });
      });
      return build(sdk);
    };
    return () => {
      ready ??= load();
      return ready;
    };
  }
}

/**
 * An SDK's error classes, as the streamed request's failure classification
 * takes them: both SDKs name them alike; `statusInStream` reads the status an
 * error inside a stream stands for, which each says its own way.
 */
export function sdkErrors(
  sdk: Omit<SdkErrors, 'statusInStream'>,
  statusInStream: SdkErrors['statusInStream'],
): SdkErrors {
  return {
    APIError: sdk.APIError,
    APIConnectionError: sdk.APIConnectionError,
    APIConnectionTimeoutError: sdk.APIConnectionTimeoutError,
    APIUserAbortError: sdk.APIUserAbortError,
    statusInStream,
  };
}
