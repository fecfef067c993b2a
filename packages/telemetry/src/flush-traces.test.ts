import { afterEach, describe, expect, it, vi } from 'vitest';
import { FLUSH_TRACES_MS, flushTraces } from './flush-traces.js';

describe('flushTraces', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('waits for the spans to be sent', async () => {
    const shutdown = vi.fn(async () => {});
    const warn = vi.fn();
    await flushTraces({ shutdown }, { warn });
    expect(shutdown).toHaveBeenCalledTimes(1);
    expect(warn).not.toHaveBeenCalled();
  });

  it('resolves at once without tracing', async () => {
    await expect(flushTraces(undefined, { warn: vi.fn() })).resolves.toBeUndefined();
  });

  it('logs a failure to send as a warning, and resolves', async () => {
    const error = new Error('collector down');
    const warn = vi.fn();
    await flushTraces({ shutdown: () => Promise.reject(error) }, { warn });
    expect(warn).toHaveBeenCalledWith({ err: error }, 'could not send the last spans');
  });

  it('holds the exit up no longer than capMs', async () => {
    vi.useFakeTimers();
    let done = false;
    const flushing = flushTraces({ shutdown: () => new Promise(() => {}) }, { warn: vi.fn() }).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(FLUSH_TRACES_MS - 1);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await flushing;
    expect(done).toBe(true);
  });
});
