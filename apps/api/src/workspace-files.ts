/**
 * The files a run left in its workspace (`join(TETHER_WORKSPACE_ROOT, runId)`),
 * read with the same confinement as the file tools: `Workspace` of
 * `@tether/tools` resolves every path lexically and then on real paths, and
 * opens files with `O_NOFOLLOW`, checking the descriptor before a byte is
 * read. Symbolic links are never followed out of the workspace and are not
 * listed.
 */
import type { Dirent } from 'node:fs';
import { type FileHandle, lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { RunFile } from '@tether/protocol';
import { confinePath, type ResolvedPath, Workspace } from '@tether/tools';
import { ApiError } from './errors.js';

/** The most entries a listing visits before it stops (`truncated: true`). */
export const MAX_LISTED_ENTRIES = 10_000;
const MAX_DEPTH = 64;

/** A client's path for a message: quoted, cut after 100 characters. */
function shown(relative: string): string {
  return JSON.stringify(relative.length > 100 ? `${relative.slice(0, 100)}…` : relative);
}

/** Tool errors about paths, as the API's errors (messages of our own: the tools' name server paths). */
function mapError(error: unknown, display: string): unknown {
  const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  switch (code) {
    case 'ERR_TOOL_NOT_FOUND':
    case 'ERR_TOOL_NOT_A_FILE':
    case 'ERR_TOOL_NOT_A_DIRECTORY':
      return new ApiError('ERR_FILE_NOT_FOUND', `The run workspace has no file ${shown(display)}.`);
    case 'ERR_TOOL_PATH_INVALID':
    case 'ERR_TOOL_PATH_OUTSIDE':
    case 'ERR_TOOL_PATH_SYMLINK':
      return new ApiError(
        'ERR_FILE_PATH_INVALID',
        `The path ${shown(display)} is not a file path inside the run workspace.`,
      );
    default:
      return error;
  }
}

/** The workspace of a run, or undefined when it does not exist (the run has not started, or it was removed). */
async function openWorkspace(root: string): Promise<Workspace | undefined> {
  const workspace = new Workspace(root);
  try {
    await workspace.realRoot();
    return workspace;
  } catch {
    return undefined;
  }
}

/** Every regular file of the workspace with its size, sorted by path. */
export async function listRunFiles(
  root: string,
  maxEntries = MAX_LISTED_ENTRIES,
): Promise<{ files: RunFile[]; truncated: boolean }> {
  const workspace = await openWorkspace(root);
  if (!workspace) return { files: [], truncated: false };
  const top = await workspace.resolve('.');
  const files: RunFile[] = [];
  let visited = 0;
  let truncated = false;

  const walk = async (dir: ResolvedPath, depth: number): Promise<void> => {
    let entries: Dirent[];
    const handle = await workspace.openDirectory(dir);
    try {
      entries = await readdir(`/proc/self/fd/${handle.fd}`, { withFileTypes: true });
    } finally {
      await handle.close();
    }
    for (const entry of entries) {
      if (++visited > maxEntries) {
        truncated = true;
        return;
      }
      const display = dir.display === '.' ? entry.name : `${dir.display}/${entry.name}`;
      const real = path.join(dir.real, entry.name);
      if (entry.isDirectory()) {
        if (depth < MAX_DEPTH) await walk({ input: display, display, real, exists: true }, depth + 1);
        else truncated = true;
      } else if (entry.isFile()) {
        const stat = await lstat(real).catch(() => undefined);
        if (stat?.isFile()) files.push({ path: display, size: stat.size });
      }
      if (truncated) return;
    }
  };
  await walk(top, 1);
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files, truncated };
}

/** Opens one regular file of the workspace for download; the caller closes the handle (or streams it). */
export async function openRunFile(
  root: string,
  relative: string,
): Promise<{ handle: FileHandle; size: number; name: string }> {
  const confined = confinePath(relative);
  if (!confined.ok) {
    throw new ApiError(
      'ERR_FILE_PATH_INVALID',
      confined.refusal === 'too-long'
        ? `The path ${shown(relative)} ${confined.problem}: no file of the run workspace has such a path.`
        : `The path ${shown(relative)} is not a file path inside the run workspace.`,
    );
  }
  const workspace = await openWorkspace(root);
  if (!workspace) {
    throw new ApiError('ERR_FILE_NOT_FOUND', `The run workspace has no file ${shown(relative)}.`);
  }
  let handle: FileHandle;
  try {
    handle = await workspace.openFile(await workspace.resolve(relative));
  } catch (error) {
    throw mapError(error, relative);
  }
  const stat = await handle.stat();
  return { handle, size: stat.size, name: path.basename(relative) };
}
