/** What the handler logs through: pino's methods, or a test's. */
export interface ShutdownLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface ShutdownOptions {
  /** Stops the process's work; resolved, the process exits 0, rejected, 1. */
  close: () => Promise<void>;
  log: ShutdownLog;
  /** Ends the process: the entry point passes `process.exit`. */
  exit: (code: number) => void;
  /** What the process is doing once signalled, logged then, and after `error while` on a failure. */
  doing: string;
  /** After this long (ms) the process exits 1 however far `close` got; unset, it waits for `close`. */
  timeoutMs?: number | undefined;
}

/** The exit code of a process ended by a second signal (128 + SIGINT's number, as shells report it). */
export const EXIT_SECOND_SIGNAL = 130;

/**
 * For an app's entry point only: the handler it installs for SIGTERM and
 * SIGINT (`process.on(signal, handler)`; this module installs nothing). The
 * first signal starts `close`, then exits 0, or 1 when `close` fails or
 * outlasts `timeoutMs`; a second signal exits at once with
 * {@link EXIT_SECOND_SIGNAL}.
 */
export function shutdownHandler(options: ShutdownOptions): (signal: NodeJS.Signals) => void {
  const { close, log, exit, doing, timeoutMs } = options;
  let signals = 0;
  return (signal) => {
    signals++;
    if (signals > 1) {
      log.warn({ signal }, 'second signal: exiting now');
      exit(EXIT_SECOND_SIGNAL);
      return;
    }
    log.info({ signal }, doing);
    if (timeoutMs !== undefined) {
      const deadline = setTimeout(() => {
        log.warn({ timeoutMs }, 'shutdown timed out: exiting now');
        exit(1);
      }, timeoutMs);
      deadline.unref();
    }
    close().then(
      () => exit(0),
      (error: unknown) => {
        log.error({ err: error }, `error while ${doing}`);
        exit(1);
      },
    );
  };
}
