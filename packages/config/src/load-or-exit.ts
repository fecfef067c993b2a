import { ConfigError } from './errors.js';

/** The exit code of a process whose configuration is invalid (`EX_CONFIG` of sysexits.h). */
export const EXIT_CONFIG = 78;

/**
 * For an app's entry point only: returns `load()`, or, when it throws, ends
 * the process with {@link EXIT_CONFIG}. An invalid environment (`ERR_CONFIG`)
 * prints its report to stderr, a block naming every bad variable, its value
 * and its range, without a stack trace: it is the operator's to fix, not a
 * bug. Any other error goes to `fatal` (the log) as it is.
 */
export function loadOrExit<T>(load: () => T, fatal: (error: unknown, message: string) => void): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) process.stderr.write(`${error.report ?? error.message}\n`);
    else fatal(error, error instanceof Error ? error.message : 'invalid configuration');
    process.exit(EXIT_CONFIG);
  }
}
