import type { Dirent } from 'node:fs';
import { readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import { relativeInside } from '../confine-path.js';
import { defineTool } from '../define-tool.js';
import { callSignal, type ToolEnvironment, throwIfCancelled } from '../tool-environment.js';
import type { Tool, ToolSchema } from '../types.js';
import { ioError, type ResolvedPath, type Workspace } from '../workspace.js';

/** Parameters of `list_dir`. */
export const ListDirParams = Type.Object(
  {
    path: Type.Optional(
      Type.String({
        description: 'Directory, relative to the workspace (or absolute inside it). Default "."',
      }),
    ),
    depth: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: 'Levels to descend: 1 lists only the directory itself. Default 2.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Catalog entry of `list_dir` (toolset `base`). */
export const listDirSchema: ToolSchema<typeof ListDirParams> = {
  name: 'list_dir',
  toolset: 'base',
  description:
    'List a directory of the workspace as an indented tree (directories end with "/"). Dependency and VCS folders such as node_modules and .git are summarised, not listed.',
  parameters: ListDirParams,
};

/**
 * Directories summarised by their entry count instead of listed: version
 * control, dependencies, caches and virtual environments.
 */
export const NOISE_DIRECTORIES: ReadonlySet<string> = new Set([
  '.git',
  '.hg',
  '.svn',
  'node_modules',
  '__pycache__',
  '.venv',
  '.tox',
  '.mypy_cache',
  '.pytest_cache',
  '.ruff_cache',
  '.next',
  '.turbo',
  '.cache',
]);

interface Walk {
  lines: string[];
  maxEntries: number;
  truncated: boolean;
  unexpanded: number;
  signal: AbortSignal;
  workspace: Workspace;
  realRoot: string;
}

/** Reads a directory through a verified descriptor. */
async function readVerified(workspace: Workspace, target: ResolvedPath): Promise<Dirent[]> {
  const handle = await workspace.openDirectory(target);
  try {
    return await readdir(`/proc/self/fd/${handle.fd}`, { withFileTypes: true });
  } catch (error) {
    throw ioError(`list ${JSON.stringify(target.display)}`, error);
  } finally {
    await handle.close();
  }
}

function order(a: Dirent, b: Dirent): number {
  const aDir = a.isDirectory() ? 0 : 1;
  const bDir = b.isDirectory() ? 0 : 1;
  if (aDir !== bDir) return aDir - bDir;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function child(parent: ResolvedPath, name: string): ResolvedPath {
  const display = parent.display === '.' ? name : path.join(parent.display, name);
  return { input: display, display, real: path.join(parent.real, name), exists: true };
}

async function walk(state: Walk, dir: ResolvedPath, depthLeft: number, indent: string): Promise<void> {
  const entries = (await readVerified(state.workspace, dir)).sort(order);
  for (const entry of entries) {
    throwIfCancelled(state.signal, 'list_dir');
    if (state.lines.length >= state.maxEntries) {
      state.truncated = true;
      return;
    }
    const name = entry.name;
    if (entry.isDirectory()) {
      if (NOISE_DIRECTORIES.has(name)) {
        const count = (await readVerified(state.workspace, child(dir, name))).length;
        state.lines.push(`${indent}${name}/  [${count} entries, not listed]`);
      } else {
        state.lines.push(`${indent}${name}/`);
        if (depthLeft > 1) await walk(state, child(dir, name), depthLeft - 1, `${indent}  `);
        else state.unexpanded++;
      }
    } else if (entry.isSymbolicLink()) {
      const target = await readlink(path.join(dir.real, name)).catch(() => undefined);
      const outside =
        target !== undefined && relativeInside(state.realRoot, path.resolve(dir.real, target)) === undefined;
      state.lines.push(
        `${indent}${name} -> ${target ?? '?'}${outside ? '  [outside the workspace: not readable]' : ''}`,
      );
    } else if (entry.isFile()) {
      state.lines.push(`${indent}${name}`);
    } else {
      const kind = entry.isFIFO() ? 'fifo' : entry.isSocket() ? 'socket' : 'device';
      state.lines.push(`${indent}${name}  [${kind}]`);
    }
  }
}

/** Makes `list_dir` for a run. */
export function createListDirTool(environment: ToolEnvironment): Tool {
  const { workspace, limits } = environment;
  return defineTool(listDirSchema, async (args, call) => {
    const signal = callSignal(environment, call.signal);
    throwIfCancelled(signal, 'list_dir');
    const target = await workspace.resolve(args.path ?? '.');
    const requested = args.depth ?? limits.listDirDefaultDepth;
    const depth = Math.min(requested, limits.listDirMaxDepth);
    const state: Walk = {
      lines: [],
      maxEntries: limits.listDirMaxEntries,
      truncated: false,
      unexpanded: 0,
      signal,
      workspace,
      realRoot: await workspace.realRoot(),
    };
    await walk(state, target, depth, '');
    const name = JSON.stringify(target.display);
    if (state.lines.length === 0) return { ok: true, content: `${name} is an empty directory.` };
    const notes: string[] = [];
    if (depth < requested) notes.push(`[depth ${requested} was lowered to the maximum, ${depth}.]`);
    if (state.truncated) {
      notes.push(
        `[Stopped after ${state.maxEntries} entries; more are not shown. List a subdirectory, or use a smaller depth.]`,
      );
    }
    if (state.unexpanded > 0) {
      notes.push(
        `[${state.unexpanded} director${state.unexpanded === 1 ? 'y was' : 'ies were'} not expanded at depth ${depth}; list them directly or raise depth.]`,
      );
    }
    const header = `${name} (depth ${depth}):`;
    return { ok: true, content: [header, ...state.lines, ...notes].join('\n') };
  });
}
