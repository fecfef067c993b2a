import { UsageError } from './exit-codes.js';
import type { CliIo } from './io.js';

/** The options a listing command takes for one page: `--limit`, `--cursor` (strings, as typed). */
export interface PageFlags {
  limit?: string;
  cursor?: string;
}

/**
 * A listing command's `--limit` and `--cursor`, with the command's abort
 * signal, as the SDK's list methods take them. A `--limit` that is not a
 * whole number above 0 is a usage error.
 */
export function pageOptions(
  flags: PageFlags,
  io: Pick<CliIo, 'signal'>,
): { limit?: number; cursor?: string; signal?: AbortSignal } {
  let limit: number | undefined;
  if (flags.limit !== undefined) {
    limit = Number(flags.limit);
    if (!(Number.isInteger(limit) && limit > 0)) {
      throw new UsageError(`--limit must be a whole number above 0 (got "${flags.limit}")`);
    }
  }
  return {
    ...(limit ? { limit } : {}),
    ...(flags.cursor ? { cursor: flags.cursor } : {}),
    ...(io.signal ? { signal: io.signal } : {}),
  };
}
