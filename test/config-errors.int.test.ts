import { spawnNode } from '@tether/testing';
import { API_MAIN, WORKER_MAIN } from '@tether/testing/scripts';
import { describe, expect, it } from 'vitest';

/** An environment with a bad value for each kind of setting, a secret and a URL's password among them. */
const BAD = {
  PORT: '99999',
  TETHER_TOKEN_TTL_S: '5',
  LOG_LEVEL: 'loud',
  TETHER_ALLOW_REPLAY: 'maybe',
  REDIS_URL: 'http://tether:hunter2@redis.internal:6379',
  TETHER_SECRETS_KEY: 'not-a-key-s3cr3t',
  TETHER_TOKEN_SECRET: 'short-pw',
  OPENAI_API_KEY: 'sk-live-0123456789',
  OPENAI_BASE_URL: 'ftp://user:pa55word@models.internal/v1',
};

/** Starts an entry point with `env` and resolves with what it printed and how it exited. */
async function failedStart(script: string, env: Record<string, string>) {
  const child = spawnNode(script, env);
  const exit = await child.exited;
  return { ...exit, output: child.output() };
}

describe('an invalid environment', () => {
  it.each([
    ['the API', API_MAIN, ['TETHER_TOKEN_TTL_S', 'TETHER_TOKEN_SECRET']],
    ['a worker', WORKER_MAIN, ['TETHER_WORKER_CONCURRENCY']],
  ])(
    'stops %s with exit code 78 and one readable block naming each bad variable once',
    async (_, script, own) => {
      const env: Record<string, string> = { ...BAD, TETHER_WORKER_CONCURRENCY: '0' };
      const { code, output } = await failedStart(script, env);
      expect(code).toBe(78);
      const lines = output.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^Invalid configuration: \d+ settings are wrong\.$/);
      expect(lines.at(-1)).toBe(
        'Every variable, its default and its range: docs/operations.md. Nothing was started.',
      );
      // No stack trace, no JSON log line.
      expect(output).not.toMatch(/^\s+at /m);
      expect(output).not.toContain('{"level"');
      // Each bad variable once, on the line that shows its value.
      const named = (name: string) => lines.filter((line) => new RegExp(`\\b${name} = `).test(line));
      for (const name of [
        'PORT',
        'LOG_LEVEL',
        'TETHER_ALLOW_REPLAY',
        'REDIS_URL',
        'TETHER_SECRETS_KEY',
        'OPENAI_BASE_URL',
        ...own,
      ]) {
        expect(named(name), `${name} in\n${output}`).toHaveLength(1);
      }
      // Values shown, with their valid range.
      expect(output).toMatch(/PORT = "99999"\n\s+must be an integer from 0 to 65535\n/);
      expect(output).toMatch(
        /LOG_LEVEL = "loud"\n\s+must be one of fatal, error, warn, info, debug, trace, silent\n/,
      );
      expect(output).toContain('REDIS_URL = "http://tether:****@redis.internal:6379"');
      expect(output).toContain('TETHER_SECRETS_KEY = (secret, 16 characters)');
      // Secrets never.
      for (const secret of ['hunter2', 'pa55word', 's3cr3t', 'short-pw', 'sk-live-0123456789']) {
        expect(output).not.toContain(secret);
      }
      if (script === API_MAIN) {
        expect(output).toMatch(/TETHER_TOKEN_TTL_S = "5"\n\s+must be an integer from 10 to 604800\n/);
        expect(output).toMatch(
          /TETHER_TOKEN_SECRET = \(secret, 8 characters\)\n\s+must be at least 16 characters\n/,
        );
      } else {
        expect(output).toMatch(/TETHER_WORKER_CONCURRENCY = "0"\n\s+must be an integer from 1 to 1000\n/);
      }
    },
  );

  it('counts one setting when one is wrong', async () => {
    // The same process, one bad variable: the block counts one.
    const { code, output } = await failedStart(API_MAIN, { PORT: 'eighty' });
    expect(code).toBe(78);
    expect(output.split('\n').slice(0, 3)).toEqual([
      'Invalid configuration: 1 setting is wrong.',
      '  PORT = "eighty"',
      '      must be an integer from 0 to 65535',
    ]);
  });
});
