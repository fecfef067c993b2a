/**
 * Lexical path confinement: whether a path stays inside a workspace, decided
 * from the strings alone (no file system, no process state). The file tools'
 * `Workspace` starts every path here before its real-path checks.
 */
import path from 'node:path';

/**
 * Returns `child` relative to `parent` when `child` is `parent` or lies below
 * it, else `undefined`. Both must be absolute and normalised.
 */
export function relativeInside(parent: string, child: string): string | undefined {
  const rel = path.relative(parent, child);
  if (rel === '') return '';
  if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return undefined;
  return rel;
}

/** The longest file name Linux allows (`NAME_MAX`), in bytes. */
export const MAX_NAME_BYTES = 255;
/** The longest path accepted, in bytes (Linux's `PATH_MAX` is 4,096 with the terminating NUL). */
export const MAX_PATH_BYTES = 4_096;

/**
 * Why a path is too long for the file system, or undefined: a component longer
 * than 255 bytes, or the whole path longer than 4,096 bytes (UTF-8). Checked
 * before any system call, which would fail with `ENAMETOOLONG`.
 */
export function pathLengthProblem(input: string): string | undefined {
  const bytes = Buffer.byteLength(input);
  if (bytes > MAX_PATH_BYTES) return `is ${bytes} bytes long, longer than ${MAX_PATH_BYTES} bytes`;
  if (bytes <= MAX_NAME_BYTES) return undefined;
  for (const name of input.split('/')) {
    const length = Buffer.byteLength(name);
    if (length > MAX_NAME_BYTES) {
      return `has a name of ${length} bytes, longer than ${MAX_NAME_BYTES} bytes`;
    }
  }
  return undefined;
}
