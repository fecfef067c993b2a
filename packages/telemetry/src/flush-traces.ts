import type { Tracing } from './tracing.js';

/** How long, at most, an exiting process waits for its last spans to go. */
export const FLUSH_TRACES_MS = 2_000;

/**
 * For an app's shutdown: sends the spans not yet sent (`tracing.shutdown`),
 * never holding the exit up for longer than `capMs`. A failure is logged as
 * a warning, never thrown. Without tracing (`undefined`), nothing to send.
 */
export async function flushTraces(
  tracing: Pick<Tracing, 'shutdown'> | undefined,
  log: { warn(fields: object, message: string): void },
  capMs = FLUSH_TRACES_MS,
): Promise<void> {
  await Promise.race([
    tracing?.shutdown(),
    new Promise((resolve) => setTimeout(resolve, capMs).unref()),
  ]).catch((error: unknown) => log.warn({ err: error }, 'could not send the last spans'));
}
