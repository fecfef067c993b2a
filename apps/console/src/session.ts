/**
 * Who the console talks to the API as. The API key lives in sessionStorage
 * (this tab only, gone when it closes), never in a URL; streams go through
 * the SDK's fetch with the key as a bearer header.
 */
import { TetherClient, TetherUnauthorizedError } from '@tether/client';

const KEY_ITEM = 'tether.apiKey';

/** A client of the API this page came from, with `apiKey` if given. */
export function clientFor(apiKey: string | undefined): TetherClient {
  return new TetherClient({ baseUrl: window.location.origin, ...(apiKey ? { apiKey } : {}) });
}

/**
 * The signed-in client: the stored key's, or one without a key when the API
 * takes none (a loopback API without `TETHER_API_KEYS`); undefined when a key
 * is needed.
 */
export async function restoreClient(): Promise<{ client: TetherClient; keyed: boolean } | undefined> {
  const stored = sessionStorage.getItem(KEY_ITEM) ?? undefined;
  const client = clientFor(stored);
  try {
    await client.list({ limit: 1 });
    return { client, keyed: stored !== undefined };
  } catch (error) {
    if (error instanceof TetherUnauthorizedError) {
      sessionStorage.removeItem(KEY_ITEM);
      return undefined;
    }
    throw error;
  }
}

/** Signs in with `apiKey`: the client once the API accepts it; throws the API's refusal otherwise. */
export async function signIn(apiKey: string): Promise<TetherClient> {
  const client = clientFor(apiKey);
  await client.list({ limit: 1 });
  sessionStorage.setItem(KEY_ITEM, apiKey);
  return client;
}

export function signOut(): void {
  sessionStorage.removeItem(KEY_ITEM);
}
