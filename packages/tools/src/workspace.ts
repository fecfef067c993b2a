/**
 * Path confinement for the file tools.
 *
 * Every path a model gives is resolved in three steps, each of which can only
 * narrow what is reachable:
 * 1. Lexically: NUL bytes and paths too long for the file system (a name over
 *    255 bytes, a path over 4,096) are refused, relative paths are joined to the
 *    workspace, absolute paths must lie inside it, and a path whose normalised
 *    form climbs out (`..`) is refused (`confinePath`, the same check the API
 *    applies to submitted and downloaded paths). From here on only the
 *    normalised path under the workspace's real path is used, never the
 *    model's string.
 * 2. On real paths: the path (or, for a file that does not exist yet, its
 *    deepest existing ancestor) goes through `realpath`, and the result must
 *    still be inside the workspace's real path. Containment is always
 *    `path.relative` on real paths, never a string prefix. A component that
 *    exists but cannot be resolved (a dangling or looping symlink) is refused.
 * 3. At open time: files are opened by their real path with `O_NOFOLLOW`, and
 *    the descriptor is checked through `/proc/self/fd/N` before a byte is read
 *    or written, so a symlink swapped in after step 2 is caught.
 *
 * Writes go to a temporary file in the target's directory (created with
 * `O_EXCL | O_NOFOLLOW` and verified the same way) and are renamed over the
 * target. Linux only (`/proc/self/fd`).
 */
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import {
  type FileHandle,
  lchown,
  lstat,
  mkdir,
  open,
  readlink,
  realpath,
  rename,
  unlink,
} from 'node:fs/promises';
import path from 'node:path';
import { type ConfinedPath, confinePath, relativeInside } from './confine-path.js';
import { errnoCode, ToolError } from './errors.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = fsConstants;

/** What a lookup answers when another writer created a name it was resolving (look again). */
const RACED = Symbol('raced');
/** A path the model gave, resolved inside the workspace. */
export interface ResolvedPath {
  /** The path as the model wrote it. */
  input: string;
  /** The normalised path relative to the workspace, for messages (`.` for the root). */
  display: string;
  /** Absolute real path; for a file that does not exist yet, its real parent joined with the missing names. */
  real: string;
  /** Whether something exists at `real` (checked without following a final symlink). */
  exists: boolean;
}

/** Renders a path for a model-facing message. */
function quote(p: string): string {
  return JSON.stringify(p);
}

async function realpathCreating(root: string): Promise<string> {
  try {
    return await realpath(root);
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw error;
    await mkdir(root, { recursive: true });
    return realpath(root);
  }
}

/** Options of a {@link Workspace}. */
export interface WorkspaceOptions {
  /**
   * The user that owns the workspace and everything written through it (a
   * root worker hands its runs' files to the unprivileged user its commands
   * run as, so that `bash` can change them too).
   */
  owner?: { uid: number; gid: number };
}

/**
 * The file-system view of one run: resolves model paths inside the workspace
 * and opens, lists and writes files only through verified descriptors.
 */
export class Workspace {
  /** The workspace as the run context gave it (absolute, normalised). */
  readonly root: string;
  readonly #owner: { uid: number; gid: number } | undefined;
  #realRoot: Promise<string> | undefined;

  /** @param root absolute path of the workspace; created on first use if it does not exist yet */
  constructor(root: string, options: WorkspaceOptions = {}) {
    this.#owner = options.owner;
    if (!path.isAbsolute(root)) {
      throw new ToolError(
        'ERR_TOOL_INVALID_CONTEXT',
        `workspace must be an absolute path (got ${quote(root)})`,
      );
    }
    this.root = path.resolve(root);
  }

  /**
   * The real path of the workspace, resolved once. A workspace that does not
   * exist yet is created here, on first use, so a run that never touches its
   * files costs no directory.
   */
  realRoot(): Promise<string> {
    this.#realRoot ??= realpathCreating(this.root)
      .then(async (real) => {
        await this.#own(real);
        return real;
      })
      .catch((error: unknown) => {
        this.#realRoot = undefined;
        throw new ToolError('ERR_TOOL_IO', `The workspace is not accessible (${errnoCode(error)}).`, {
          cause: error,
        });
      });
    return this.#realRoot;
  }

  /** Hands `real` (never following a symlink) to the workspace's owner, when it has one. */
  async #own(real: string): Promise<void> {
    if (this.#owner !== undefined) await lchown(real, this.#owner.uid, this.#owner.gid);
  }

  /**
   * Resolves a model path inside the workspace.
   * @throws ToolError `ERR_TOOL_PATH_INVALID`, `ERR_TOOL_PATH_OUTSIDE`,
   *   `ERR_TOOL_PATH_SYMLINK`, `ERR_TOOL_NOT_A_DIRECTORY` or `ERR_TOOL_IO`
   */
  async resolve(input: string): Promise<ResolvedPath> {
    // Refusals that need no workspace come before it is touched (and created).
    const lexical = confinePath(input, { roots: [this.root] });
    if (!lexical.ok && lexical.refusal !== 'outside') throw pathRefused(input, lexical);
    const realRoot = await this.realRoot();
    // An absolute path may also name the workspace by its real path.
    const confined = lexical.ok ? lexical : confinePath(input, { roots: [this.root, realRoot] });
    if (!confined.ok) throw pathRefused(input, confined);
    const rel = confined.relative;
    const display = rel === '' ? '.' : rel;
    const candidate = rel === '' ? realRoot : path.join(realRoot, rel);

    let real: string;
    let exists: boolean;
    try {
      real = await realpath(candidate);
      exists = true;
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'ELOOP') throw symlinkLoop(input);
      if (code === 'ENOTDIR') throw parentNotDirectory(input);
      if (code !== 'ENOENT') throw ioError(`resolve ${quote(input)}`, error);
      real = await this.#resolveMissing(input, realRoot, rel.split(path.sep));
      exists = false;
    }
    if (relativeInside(realRoot, real) === undefined) {
      throw new ToolError(
        'ERR_TOOL_PATH_OUTSIDE',
        `The path ${quote(input)} leads outside the workspace through a symbolic link. File tools only reach files inside the workspace; refusing.`,
      );
    }
    return { input, display, real, exists };
  }

  /**
   * For a path that does not exist: finds the deepest existing ancestor,
   * resolves it, and joins the missing names onto it. A component that exists
   * but does not resolve is a dangling or looping symlink and is refused.
   */
  async #resolveMissing(input: string, realRoot: string, parts: string[]): Promise<string> {
    // Another writer may create a missing directory between the realpath and the lstat below (crew
    // children share a workspace): a component that appears as a real directory or file is looked up
    // again, a few times, rather than taken for a dangling link.
    for (let round = 0; round < 5; round++) {
      const resolved = await this.#resolveMissingOnce(input, realRoot, parts);
      if (resolved !== RACED) return resolved;
    }
    throw new ToolError('ERR_TOOL_PATH_SYMLINK', `The path ${quote(input)} could not be resolved.`);
  }

  async #resolveMissingOnce(
    input: string,
    realRoot: string,
    parts: string[],
  ): Promise<string | typeof RACED> {
    for (let i = parts.length - 1; i >= 0; i--) {
      const ancestor = path.join(realRoot, ...parts.slice(0, i));
      let realAncestor: string;
      try {
        realAncestor = await realpath(ancestor);
      } catch (error) {
        const code = errnoCode(error);
        if (code === 'ENOENT') continue;
        if (code === 'ELOOP') throw symlinkLoop(input);
        if (code === 'ENOTDIR') throw parentNotDirectory(input);
        throw ioError(`resolve ${quote(input)}`, error);
      }
      const next = path.join(ancestor, parts[i] as string);
      try {
        const st = await lstat(next);
        // It exists now, yet realpath failed on it: a symlink that leads nowhere, or a name another
        // writer created in between (then look again).
        if (!st.isSymbolicLink()) return RACED;
        throw new ToolError(
          'ERR_TOOL_PATH_SYMLINK',
          `The path ${quote(input)} goes through a symbolic link whose target does not exist. File tools do not follow dangling links; use the real path of the file.`,
        );
      } catch (error) {
        if (error instanceof ToolError) throw error;
        const code = errnoCode(error);
        if (code === 'ENOTDIR') throw parentNotDirectory(input);
        if (code !== 'ENOENT') throw ioError(`resolve ${quote(input)}`, error);
      }
      if (relativeInside(realRoot, realAncestor) === undefined) {
        throw new ToolError(
          'ERR_TOOL_PATH_OUTSIDE',
          `The path ${quote(input)} leads outside the workspace through a symbolic link. File tools only reach files inside the workspace; refusing.`,
        );
      }
      return path.join(realAncestor, ...parts.slice(i));
    }
    // Unreachable in practice: the workspace root itself always resolves.
    throw ioError(`resolve ${quote(input)}`, new Error('no existing ancestor'));
  }

  /**
   * Opens an existing regular file for reading (`O_NOFOLLOW`, verified
   * through `/proc/self/fd`). The caller closes the handle.
   * @throws ToolError `ERR_TOOL_NOT_FOUND`, `ERR_TOOL_NOT_A_FILE`, `ERR_TOOL_PATH_SYMLINK`...
   */
  async openFile(target: ResolvedPath): Promise<FileHandle> {
    if (!target.exists) throw notFound(target.display, 'file');
    let handle: FileHandle;
    try {
      handle = await open(target.real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (error) {
      throw openError(target, error);
    }
    try {
      await this.#verify(handle, target);
      const st = await handle.stat();
      if (st.isDirectory()) {
        throw new ToolError(
          'ERR_TOOL_NOT_A_FILE',
          `${quote(target.display)} is a directory, not a file. Use list_dir to see what it contains.`,
        );
      }
      if (!st.isFile()) {
        throw new ToolError(
          'ERR_TOOL_NOT_A_FILE',
          `${quote(target.display)} is not a regular file (a FIFO, socket or device); file tools only handle regular files.`,
        );
      }
      return handle;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /**
   * Opens an existing directory (`O_DIRECTORY | O_NOFOLLOW`, verified). Its
   * entries can be read through `/proc/self/fd/<fd>`. The caller closes it.
   */
  async openDirectory(target: ResolvedPath): Promise<FileHandle> {
    if (!target.exists) throw notFound(target.display, 'directory');
    let handle: FileHandle;
    try {
      handle = await open(target.real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    } catch (error) {
      if (errnoCode(error) === 'ENOTDIR') {
        throw new ToolError(
          'ERR_TOOL_NOT_A_DIRECTORY',
          `${quote(target.display)} is a file, not a directory. Use read_file to read it.`,
        );
      }
      throw openError(target, error);
    }
    try {
      await this.#verify(handle, target);
      return handle;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /**
   * Replaces (or creates) the file at `target` with `data`, atomically: a
   * temporary file in the same directory, verified, synced, then renamed over
   * the target. Missing parent directories are created. An existing file keeps
   * its permission bits.
   * @returns whether the file was created
   */
  async writeFileAtomic(target: ResolvedPath, data: Uint8Array): Promise<{ created: boolean }> {
    let mode = 0o644;
    let created = true;
    try {
      const st = await lstat(target.real);
      if (st.isDirectory()) {
        throw new ToolError(
          'ERR_TOOL_NOT_A_FILE',
          `${quote(target.display)} is a directory; give the path of a file inside it.`,
        );
      }
      if (st.isSymbolicLink()) throw symlinkRace(target.display);
      if (!st.isFile()) {
        throw new ToolError(
          'ERR_TOOL_NOT_A_FILE',
          `${quote(target.display)} is not a regular file (a FIFO, socket or device); refusing to replace it.`,
        );
      }
      mode = st.mode & 0o7777;
      created = false;
    } catch (error) {
      if (error instanceof ToolError) throw error;
      if (errnoCode(error) !== 'ENOENT') throw ioError(`inspect ${quote(target.display)}`, error);
    }

    const dir = path.dirname(target.real);
    await this.#ensureDirectory(dir, target.display);
    const temp = path.join(dir, `.${path.basename(target.real)}.${randomBytes(6).toString('hex')}.tmp`);
    let handle: FileHandle | undefined;
    try {
      try {
        handle = await open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
      } catch (error) {
        throw ioError(`create a temporary file next to ${quote(target.display)}`, error);
      }
      const opened = await readlink(`/proc/self/fd/${handle.fd}`);
      if (opened !== temp) throw symlinkRace(target.display);
      await handle.writeFile(data);
      await handle.chmod(mode);
      if (this.#owner !== undefined) await handle.chown(this.#owner.uid, this.#owner.gid);
      await handle.datasync();
      await handle.close();
      handle = undefined;
      await rename(temp, target.real);
      return { created };
    } catch (error) {
      if (handle !== undefined) await handle.close().catch(() => undefined);
      await unlink(temp).catch(() => undefined);
      if (error instanceof ToolError) throw error;
      throw ioError(`write ${quote(target.display)}`, error);
    }
  }

  /** Creates `dir` (a path under the real root) one component at a time, refusing symlinks. */
  async #ensureDirectory(dir: string, display: string): Promise<void> {
    const realRoot = await this.realRoot();
    const rel = relativeInside(realRoot, dir);
    if (rel === undefined) throw symlinkRace(display);
    let current = realRoot;
    for (const part of rel === '' ? [] : rel.split(path.sep)) {
      current = path.join(current, part);
      try {
        await mkdir(current);
        await this.#own(current);
      } catch (error) {
        const code = errnoCode(error);
        if (code === 'ENOTDIR') throw parentNotDirectory(display);
        if (code !== 'EEXIST') throw ioError(`create the directory of ${quote(display)}`, error);
      }
      const st = await lstat(current).catch((error: unknown) => {
        throw ioError(`create the directory of ${quote(display)}`, error);
      });
      if (st.isSymbolicLink()) throw symlinkRace(display);
      if (!st.isDirectory()) throw parentNotDirectory(display);
    }
  }

  /** Checks through `/proc/self/fd` that an open descriptor is the resolved path, inside the workspace. */
  async #verify(handle: FileHandle, target: ResolvedPath): Promise<void> {
    const realRoot = await this.realRoot();
    const opened = await readlink(`/proc/self/fd/${handle.fd}`);
    if (opened !== target.real || relativeInside(realRoot, opened) === undefined) {
      throw symlinkRace(target.display);
    }
  }
}

/** A path {@link confinePath} refused, as the model-facing error. */
function pathRefused(input: string, refused: Extract<ConfinedPath, { ok: false }>): ToolError {
  switch (refused.refusal) {
    case 'empty':
      return new ToolError(
        'ERR_TOOL_PATH_INVALID',
        'The path is empty. Give a path relative to the workspace.',
      );
    case 'nul':
      return new ToolError(
        'ERR_TOOL_PATH_INVALID',
        'The path contains a NUL byte, which no file name can hold.',
      );
    case 'too-long':
      return new ToolError(
        'ERR_TOOL_PATH_INVALID',
        `The path ${quote(shorten(input))} ${refused.problem}, which no file system here accepts. Use a shorter path.`,
      );
    default:
      return new ToolError(
        'ERR_TOOL_PATH_OUTSIDE',
        `The path ${quote(input)} is outside the workspace. File tools only reach files inside the workspace; use a path relative to it, such as "src/index.ts".`,
      );
  }
}

function notFound(display: string, kind: 'file' | 'directory'): ToolError {
  return new ToolError(
    'ERR_TOOL_NOT_FOUND',
    `The ${kind} ${quote(display)} does not exist. Check the path with list_dir (paths are relative to the workspace).`,
  );
}

function symlinkLoop(input: string): ToolError {
  return new ToolError(
    'ERR_TOOL_PATH_SYMLINK',
    `The path ${quote(input)} goes through a loop of symbolic links and cannot be resolved.`,
  );
}

function symlinkRace(display: string): ToolError {
  return new ToolError(
    'ERR_TOOL_PATH_SYMLINK',
    `${quote(display)} changed into a symbolic link while it was being opened; refusing. Check the path and try again.`,
  );
}

/** A path for a message, cut after 100 characters. */
function shorten(input: string): string {
  return input.length > 100 ? `${input.slice(0, 100)}…` : input;
}

function parentNotDirectory(input: string): ToolError {
  return new ToolError(
    'ERR_TOOL_NOT_A_DIRECTORY',
    `A parent of ${quote(input)} is a file, not a directory, so the path cannot exist.`,
  );
}

function openError(target: ResolvedPath, error: unknown): ToolError {
  const code = errnoCode(error);
  if (code === 'ELOOP') return symlinkRace(target.display);
  if (code === 'ENOENT') return notFound(target.display, 'file');
  return ioError(`open ${quote(target.display)}`, error);
}

/** A file-system failure as a model-facing error. */
export function ioError(action: string, error: unknown): ToolError {
  const code = errnoCode(error);
  const why =
    code === 'EACCES' || code === 'EPERM'
      ? 'permission denied'
      : code === 'ENOSPC'
        ? 'no space left on the device'
        : code === 'EROFS'
          ? 'the file system is read-only'
          : code === 'EISDIR'
            ? 'it is a directory'
            : (code ?? (error instanceof Error ? error.message : String(error)));
  return new ToolError('ERR_TOOL_IO', `Could not ${action}: ${why}.`, { cause: error });
}

/**
 * The workspace directory of a run under the workspace root: its own
 * (`<root>/<runId>`), or its session's, which every run of the session shares
 * (`<root>/sessions/<sessionId>`).
 */
export function workspaceDir(root: string, run: { id: string; sessionId?: string | undefined }): string {
  return run.sessionId ? path.join(root, 'sessions', run.sessionId) : path.join(root, run.id);
}
