import { afterEach, describe, expect, it, vi } from 'vitest';
import { EXIT_SECOND_SIGNAL, type ShutdownOptions, shutdownHandler } from './shutdown-handler.js';

/** A handler over fakes: the lines it logs and the codes it exits with, in order. */
function setUp(options: Partial<ShutdownOptions> & Pick<ShutdownOptions, 'close'>) {
  const lines: string[] = [];
  const exits: number[] = [];
  const line = (level: string) => (fields: object, message: string) =>
    lines.push(`${level} ${message} ${JSON.stringify(fields)}`);
  const handler = shutdownHandler({
    log: { info: line('info'), warn: line('warn'), error: line('error') },
    exit: (code) => exits.push(code),
    doing: 'shutting down',
    ...options,
  });
  return { handler, lines, exits };
}

describe('shutdownHandler', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('closes on the first signal, then exits 0', async () => {
    let resolve = () => {};
    const closed = new Promise<void>((done) => {
      resolve = done;
    });
    const close = vi.fn(() => closed);
    const { handler, lines, exits } = setUp({ close });
    handler('SIGTERM');
    expect(close).toHaveBeenCalledTimes(1);
    expect(lines).toEqual(['info shutting down {"signal":"SIGTERM"}']);
    expect(exits).toEqual([]);
    resolve();
    await vi.waitFor(() => expect(exits).toEqual([0]));
  });

  it('exits 1 when close fails, saying what it was doing', async () => {
    const { handler, lines, exits } = setUp({
      close: () => Promise.reject(new Error('boom')),
      doing: 'stopping',
    });
    handler('SIGINT');
    await vi.waitFor(() => expect(exits).toEqual([1]));
    expect(lines[0]).toBe('info stopping {"signal":"SIGINT"}');
    expect(lines[1]).toMatch(/^error error while stopping /);
  });

  it('exits at once on a second signal, without closing again', () => {
    const close = vi.fn(() => new Promise<void>(() => {}));
    const { handler, lines, exits } = setUp({ close });
    handler('SIGTERM');
    handler('SIGINT');
    expect(close).toHaveBeenCalledTimes(1);
    expect(exits).toEqual([EXIT_SECOND_SIGNAL]);
    expect(lines.at(-1)).toBe('warn second signal: exiting now {"signal":"SIGINT"}');
  });

  it('exits 1 when close outlasts timeoutMs, and waits for close without one', () => {
    vi.useFakeTimers();
    const never = () => new Promise<void>(() => {});
    const timed = setUp({ close: never, timeoutMs: 1_000 });
    const untimed = setUp({ close: never });
    timed.handler('SIGTERM');
    untimed.handler('SIGTERM');
    vi.advanceTimersByTime(999);
    expect(timed.exits).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(timed.exits).toEqual([1]);
    expect(timed.lines.at(-1)).toBe('warn shutdown timed out: exiting now {"timeoutMs":1000}');
    vi.advanceTimersByTime(3_600_000);
    expect(untimed.exits).toEqual([]);
  });
});
