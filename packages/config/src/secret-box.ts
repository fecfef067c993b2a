import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Env, EnvReader } from './config.js';
import { ConfigError } from './errors.js';

/** The environment variable holding the key of secrets at rest. */
export const SECRETS_KEY_ENV = 'TETHER_SECRETS_KEY';

const VERSION = 'v1';

/**
 * Secrets at rest (MCP server headers, webhook signing secrets): sealed with
 * AES-256-GCM under the key in `TETHER_SECRETS_KEY` (32 bytes, base64 or hex,
 * the same on every API and worker), so a copy of Redis alone reveals none.
 * A sealed value reads `v1.<iv>.<tag>.<ciphertext>`, in base64url.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error(`a secrets key is 32 bytes, got ${key.length}`);
    this.#key = key;
  }

  /**
   * The box of `TETHER_SECRETS_KEY`, or undefined when it is unset. Throws
   * {@link ConfigError} when it is not 32 bytes in base64 or hex.
   */
  static fromEnv(env: Env): SecretBox | undefined {
    const raw = env[SECRETS_KEY_ENV]?.trim();
    if (!raw) return undefined;
    const key = /^[0-9a-f]{64}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
    if (key.length !== 32 || (!/^[0-9a-f]{64}$/i.test(raw) && !/^[A-Za-z0-9+/_-]+={0,2}$/.test(raw))) {
      throw new ConfigError(
        'ERR_CONFIG',
        `${SECRETS_KEY_ENV} must be 32 bytes in base64 or hex (make one with \`openssl rand -base64 32\`)`,
      );
    }
    return new SecretBox(key);
  }

  /** A new random key, base64 (for development set-ups). */
  static newKey(): string {
    return randomBytes(32).toString('base64');
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), sealed]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  }

  /** The plaintext of a sealed value; throws when it was sealed under another key or changed. */
  open(sealed: string): string {
    const [version, iv, tag, body, ...rest] = sealed.split('.');
    if (
      version !== VERSION ||
      iv === undefined ||
      tag === undefined ||
      body === undefined ||
      rest.length > 0
    ) {
      throw new Error('not a sealed secret');
    }
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    } catch (error) {
      throw new Error(`the secret cannot be opened: sealed under another ${SECRETS_KEY_ENV}, or changed`, {
        cause: error,
      });
    }
  }
}

/**
 * `TETHER_SECRETS_KEY`'s box, or undefined when unset; a malformed key is a
 * problem of the configuration, added to `reader` (the API's and the worker's
 * `config.ts` both read it so).
 */
export function readSecrets(env: Env, reader: EnvReader): SecretBox | undefined {
  try {
    return SecretBox.fromEnv(env);
  } catch (error) {
    reader.problem(error instanceof Error ? error.message : String(error));
    return undefined;
  }
}
