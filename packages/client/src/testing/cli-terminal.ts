import { afterEach, beforeEach } from 'vitest';
import type { CliIo } from '../cli/io.js';
import { FakeApi } from './fake-api.js';
import { KeyboardInput, RecordingOutput } from './terminal.js';

/** A fake API on a real port for each test of the file (tenant `tenant-a`, key `key-a`), closed after it. */
export function useFakeApi(): () => FakeApi {
  let api: FakeApi | undefined;
  beforeEach(async () => {
    api = new FakeApi();
    api.keys.set('key-a', 'tenant-a');
    await api.start();
  });
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });
  return () => {
    if (!api) throw new Error('useFakeApi: the fake API runs only inside a test');
    return api;
  };
}

/**
 * The CLI's streams, pointed at `api` as tenant-a: a terminal (`tty`) or a pipe, with `stdin`'s
 * text already typed and ended when given.
 */
export function cliTerminal(api: FakeApi, options: { tty?: boolean; stdin?: string } = {}) {
  const stdout = new RecordingOutput(options.tty ?? false);
  const stderr = new RecordingOutput(false);
  const stdin = new KeyboardInput(options.tty ?? false);
  if (options.stdin !== undefined) stdin.end(options.stdin);
  const io: CliIo = {
    stdout,
    stderr,
    stdin,
    env: { TETHER_URL: api.baseUrl, TETHER_API_KEY: 'key-a', NO_COLOR: '1' },
  };
  return { io, stdout, stderr, stdin };
}
