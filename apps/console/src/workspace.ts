/**
 * A run's workspace as the Files tab shows it, from the API's flat listing
 * (`GET /v1/runs/:id/files`: every regular file's path and size, sorted).
 * Pure, so that the unit tests check it without a browser.
 *
 * Folders are not listed by the API: a folder is the common prefix of the
 * files under it, so an empty folder does not show (the API lists files only).
 */
import type { RunFile } from '@tether/client';

/** A folder directly under the one shown: its name, path, and the files under it (at any depth). */
export interface FolderEntry {
  name: string;
  path: string;
  files: number;
  size: number;
}

/** What a folder of the workspace holds directly: its folders, then its files, each by name. */
export interface FolderView {
  folders: FolderEntry[];
  files: (RunFile & { name: string })[];
}

/** What a path of the workspace names, given its listing. */
export type PathKind = { kind: 'file'; file: RunFile } | { kind: 'folder' } | { kind: 'missing' };

/** Whether `path` is a file, a folder (the top, '', always is) or nothing the listing holds. */
export function kindOf(files: readonly RunFile[], path: string): PathKind {
  if (path === '') return { kind: 'folder' };
  const file = files.find((candidate) => candidate.path === path);
  if (file) return { kind: 'file', file };
  const prefix = `${path}/`;
  return files.some((candidate) => candidate.path.startsWith(prefix))
    ? { kind: 'folder' }
    : { kind: 'missing' };
}

/** The folders and files directly in `folder` ('' for the top), folders first, each sorted by name. */
export function folderView(files: readonly RunFile[], folder: string): FolderView {
  const prefix = folder === '' ? '' : `${folder}/`;
  const folders = new Map<string, FolderEntry>();
  const direct: FolderView['files'] = [];
  for (const file of files) {
    if (!file.path.startsWith(prefix)) continue;
    const rest = file.path.slice(prefix.length);
    const slash = rest.indexOf('/');
    if (slash === -1) {
      direct.push({ ...file, name: rest });
      continue;
    }
    const name = rest.slice(0, slash);
    const entry = folders.get(name) ?? { name, path: `${prefix}${name}`, files: 0, size: 0 };
    entry.files++;
    entry.size += file.size;
    folders.set(name, entry);
  }
  const byName = (a: { name: string }, b: { name: string }) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  return { folders: [...folders.values()].sort(byName), files: direct.sort(byName) };
}

/** The folders from the top down to `path`'s parent, each with its path ('' the top): a breadcrumb trail. */
export function ancestorsOf(path: string): { name: string; path: string }[] {
  const segments = path.split('/').filter((segment) => segment !== '');
  return segments.slice(0, -1).map((name, index) => ({ name, path: segments.slice(0, index + 1).join('/') }));
}

/** The last segment of `path`. */
export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

const UNITS = ['KB', 'MB', 'GB', 'TB'];

/** A size for people: "0 bytes", "1 byte", "512 bytes", "1.5 KB", "12 MB" (powers of 1,024). */
export function formatBytes(bytes: number): string {
  if (bytes < 1_024) return bytes === 1 ? '1 byte' : `${bytes} bytes`;
  let value = bytes;
  let unit = -1;
  while (value >= 1_024 && unit < UNITS.length - 1) {
    value /= 1_024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1).replace(/\.0$/, '') : Math.round(value)} ${UNITS[unit]}`;
}

/**
 * The file's bytes as text, or undefined when they are not text: a NUL byte
 * (what binary formats are full of, and UTF-8 text never holds), or bytes that
 * are not valid UTF-8.
 */
export function textOf(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
