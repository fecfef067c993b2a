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

/** Why {@link confinePath} refused a path. */
export type PathRefusal = 'empty' | 'nul' | 'too-long' | 'absolute' | 'outside' | 'directory';

/** Options of {@link confinePath}. */
export interface ConfineOptions {
  /**
   * Absolute, normalised paths of the workspace (as given, and its real path)
   * that an absolute path may lie inside. Without any, every absolute path is
   * refused (`absolute`).
   */
  roots?: readonly string[];
  /**
   * The path comes from a client on any system: `\` separates names too, and
   * Windows forms (`C:\x`, `\\host\share`) are absolute.
   */
  portable?: boolean;
  /** The path must name a file: not the workspace itself, and not ending in `/`. */
  file?: boolean;
}

/** The outcome of {@link confinePath}. */
export type ConfinedPath =
  | {
      ok: true;
      /** The normalised path relative to the workspace (`''` for the workspace itself). */
      relative: string;
    }
  | {
      ok: false;
      refusal: PathRefusal;
      /** What is wrong, to follow the quoted path in a message: `contains a NUL byte`. */
      problem: string;
    };

const PROBLEMS = {
  empty: 'is empty',
  nul: 'contains a NUL byte',
  absolute: 'is absolute; give a path relative to the workspace',
  outside: 'leads outside the workspace',
  directory: 'names a directory, not a file',
} as const satisfies Partial<Record<PathRefusal, string>>;

function refused(refusal: keyof typeof PROBLEMS): ConfinedPath {
  return { ok: false, refusal, problem: PROBLEMS[refusal] };
}

/**
 * Decides from the string alone whether `input` names something inside a
 * workspace, and where: the one lexical check of the file tools (before their
 * real-path checks), the worker's submitted files and the API's submissions
 * and downloads.
 *
 * In order: an empty path, a NUL byte (no file name holds one), a path too
 * long for the file system (see {@link pathLengthProblem}), an absolute path
 * outside every root (or any absolute path without roots), a path whose
 * normalised form climbs out with `..`, and, for `file`, a path naming a
 * directory. Containment is `path.relative`, never a string prefix. Empty
 * names (`a//b`) and `.` collapse as the file system would read them.
 */
export function confinePath(input: string, options: ConfineOptions = {}): ConfinedPath {
  if (input.length === 0) return refused('empty');
  if (input.includes('\0')) return refused('nul');
  const tooLong = pathLengthProblem(input);
  if (tooLong !== undefined) return { ok: false, refusal: 'too-long', problem: tooLong };
  const portable = options.portable === true;
  const slashed = portable ? input.replaceAll('\\', '/') : input;
  let relative: string;
  if (path.posix.isAbsolute(slashed) || (portable && path.win32.isAbsolute(input))) {
    const roots = options.roots ?? [];
    if (roots.length === 0) return refused('absolute');
    const absolute = path.posix.resolve(slashed);
    const inside = roots.map((root) => relativeInside(root, absolute)).find((rel) => rel !== undefined);
    if (inside === undefined) return refused('outside');
    relative = inside;
  } else {
    const normal = path.posix.normalize(slashed);
    if (normal === '..' || normal.startsWith('../')) return refused('outside');
    relative = normal === '.' || normal === './' ? '' : normal.replace(/\/+$/, '');
  }
  if (options.file === true && (relative === '' || slashed.endsWith('/'))) return refused('directory');
  return { ok: true, relative };
}
