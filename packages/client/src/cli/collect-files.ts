import type { Dirent } from 'node:fs';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { UsageError } from './exit-codes.js';

/** Directories never sent: dependencies and version control. */
const SKIPPED_DIRS: ReadonlySet<string> = new Set(['node_modules', '.git']);

export const DEFAULT_MAX_FILES_BYTES = 1024 * 1024;

export interface CollectFilesOptions {
  /** Refuse when the text files add up to more than this (default 1 MiB). */
  maxBytes?: number;
  /** The flag to name in messages. */
  flag?: string;
}

export interface CollectedFiles {
  /** Relative, `/`-separated path → UTF-8 content. */
  files: Record<string, string>;
  totalBytes: number;
  /** Files left out, with why: binary content, or a link (links are never followed). */
  skipped: Array<{ path: string; reason: 'binary' | 'link' }>;
}

/**
 * Reads a directory's text files for a run's `files` map: recursive, in path
 * order, skipping `node_modules` and `.git`, binary files (a NUL byte or
 * invalid UTF-8) and symbolic links. Throws a `UsageError` when the directory
 * is missing or when the files add up to more than `maxBytes`.
 */
export async function collectFiles(dir: string, options: CollectFilesOptions = {}): Promise<CollectedFiles> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_FILES_BYTES;
  const flag = options.flag ?? '--files';
  const root = resolve(dir);
  const stat = await lstat(root).catch(() => undefined);
  if (!stat?.isDirectory()) throw new UsageError(`${flag} ${dir}: no such directory`);

  const result: CollectedFiles = { files: {}, totalBytes: 0, skipped: [] };
  const sizes: Array<{ path: string; bytes: number }> = [];
  const decoder = new TextDecoder('utf-8', { fatal: true });

  const walk = async (current: string): Promise<void> => {
    const entries: Dirent[] = await readdir(current, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const full = join(current, entry.name);
      const path = relative(root, full).split(sep).join('/');
      if (entry.isSymbolicLink()) {
        result.skipped.push({ path, reason: 'link' });
      } else if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) await walk(full);
      } else if (entry.isFile()) {
        if (result.totalBytes > maxBytes) {
          // Over the limit already: only sizes matter now, for the message.
          const bytes = (await lstat(full)).size;
          result.totalBytes += bytes;
          sizes.push({ path, bytes });
          continue;
        }
        const buffer = await readFile(full);
        let text: string;
        try {
          if (buffer.subarray(0, 8_192).includes(0)) throw new Error('NUL byte');
          text = decoder.decode(buffer);
        } catch {
          result.skipped.push({ path, reason: 'binary' });
          continue;
        }
        result.files[path] = text;
        result.totalBytes += buffer.byteLength;
        sizes.push({ path, bytes: buffer.byteLength });
      }
    }
  };
  await walk(root);

  if (result.totalBytes > maxBytes) {
    const largest = sizes
      .sort((a, b) => b.bytes - a.bytes)
      .slice(0, 3)
      .map((f) => `${f.path} ${formatBytes(f.bytes)}`)
      .join(', ');
    throw new UsageError(
      `${flag} ${dir}: the text files add up to ${formatBytes(result.totalBytes)}, over the ${formatBytes(maxBytes)} limit ` +
        `(largest: ${largest}). Point ${flag} at a smaller directory.`,
    );
  }
  return result;
}

/** `1536` → `1.5 KiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${trim(bytes / 1024)} KiB`;
  return `${trim(bytes / (1024 * 1024))} MiB`;
}

function trim(n: number): string {
  return n.toFixed(1).replace(/\.0$/, '');
}
