/** The exit code of a process whose configuration is invalid (`EX_CONFIG` of sysexits.h). */
export const EXIT_CONFIG = 78;

/**
 * For an app's entry point only: returns `load()`, or, when it throws (an
 * invalid environment, `ERR_CONFIG` naming every bad variable), hands the
 * error to `fatal` and ends the process with {@link EXIT_CONFIG}.
 */
export function loadOrExit<T>(load: () => T, fatal: (error: unknown, message: string) => void): T {
  try {
    return load();
  } catch (error) {
    fatal(error, error instanceof Error ? error.message : 'invalid configuration');
    process.exit(EXIT_CONFIG);
  }
}
