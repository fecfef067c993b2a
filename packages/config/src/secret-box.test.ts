import { describe, expect, it } from 'vitest';
import { EnvReader } from './config.js';
import { readSecrets, SecretBox } from './secret-box.js';

describe('SecretBox', () => {
  const key = SecretBox.newKey();
  const box = SecretBox.fromEnv({ TETHER_SECRETS_KEY: key });

  it('seals and opens; the sealed form hides the secret and differs each time', () => {
    const sealed = box?.seal('Bearer sk-secret-123') ?? '';
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain('secret');
    expect(box?.seal('Bearer sk-secret-123')).not.toBe(sealed);
    expect(box?.open(sealed)).toBe('Bearer sk-secret-123');
  });

  it('takes a hex key too, and is undefined without one', () => {
    const hex = Buffer.from(key, 'base64').toString('hex');
    const other = SecretBox.fromEnv({ TETHER_SECRETS_KEY: hex });
    expect(other?.open(box?.seal('x') ?? '')).toBe('x');
    expect(SecretBox.fromEnv({})).toBeUndefined();
    expect(SecretBox.fromEnv({ TETHER_SECRETS_KEY: '' })).toBeUndefined();
  });

  it.each(['short', 'z'.repeat(64), 'not base64 at all!!'])(
    'refuses the key %s, saying how to make one',
    (bad) => {
      expect(() => SecretBox.fromEnv({ TETHER_SECRETS_KEY: bad })).toThrow(
        /32 bytes in base64 or hex.*openssl rand/,
      );
    },
  );

  it('refuses a value sealed under another key, or changed', () => {
    const sealed = box?.seal('secret') ?? '';
    const stranger = SecretBox.fromEnv({ TETHER_SECRETS_KEY: SecretBox.newKey() });
    expect(() => stranger?.open(sealed)).toThrow(/another TETHER_SECRETS_KEY, or changed/);
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    expect(() => box?.open(parts.join('.'))).toThrow(/cannot be opened/);
    expect(() => box?.open('plain')).toThrow(/not a sealed secret/);
  });
});

describe('readSecrets', () => {
  it('is the box of TETHER_SECRETS_KEY, or undefined when unset, with no problem', () => {
    const env = { TETHER_SECRETS_KEY: SecretBox.newKey() };
    const reader = new EnvReader(env);
    const box = readSecrets(env, reader);
    expect(box?.open(box.seal('x'))).toBe('x');
    expect(readSecrets({}, reader)).toBeUndefined();
    expect(reader.problems).toEqual([]);
  });

  it("adds a malformed key to the reader's problems, and is undefined", () => {
    const env = { TETHER_SECRETS_KEY: 'short' };
    const reader = new EnvReader(env);
    expect(readSecrets(env, reader)).toBeUndefined();
    expect(reader.problems).toEqual([
      'TETHER_SECRETS_KEY must be 32 bytes in base64 or hex (make one with `openssl rand -base64 32`)',
    ]);
    expect(() => reader.done()).toThrow(/TETHER_SECRETS_KEY must be 32 bytes/);
  });
});
