/** The CLI's exit codes (documented in docs/client.md). */
export const EXIT = {
  /** The run completed, or the command did what it was asked. */
  ok: 0,
  /** The run failed or was cancelled, or the API refused the request. */
  failed: 1,
  /** Bad arguments or options. */
  usage: 2,
  /** The server could not be reached. */
  unreachable: 3,
  /** Ctrl-C: the CLI stopped following; the run goes on. */
  interrupted: 130,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A mistake in the command line: printed with a hint, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
