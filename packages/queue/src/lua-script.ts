import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ChainableCommander, Redis } from 'ioredis';

/**
 * A Lua script run by its SHA, loaded on first use (and again after a Redis
 * restart or failover flushes the script cache).
 */
export class LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;

  constructor(name: string, source: string) {
    this.name = name;
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (isNoScript(error)) return redis.eval(this.source, keys.length, ...keys, ...args);
      throw error;
    }
  }

  /** Adds the script to a pipeline by its SHA; on a NOSCRIPT reply the caller runs it again with `run`. */
  queue(pipeline: ChainableCommander, keys: string[], args: (string | number)[]): void {
    pipeline.evalsha(this.sha, keys.length, ...keys, ...args);
  }
}

/** Whether Redis answered that it does not know the script (a restart or failover emptied its cache). */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.includes('NOSCRIPT');
}

/** The header every script file opens with: a Lua long comment, documentation only. */
const HEADER = /^--\[\[[\s\S]*?\]\]\n/;
/** A line that includes a shared snippet, as BullMQ writes it: `--- @include "includes/append"`. */
const INCLUDE = /^---[ \t]*@include[ \t]+"([^"]+)"[ \t]*$/gm;

/**
 * Reads the script `name` from `<dir>/<name>.lua` and returns the source Redis
 * runs: the header dropped, the trailing newline dropped, and each
 * `--- @include "<path>"` line replaced by the file `<dir>/<path>.lua` (read the
 * same way, its own includes expanded). A file included twice, directly or
 * through another include, is emitted once, where it is first included.
 *
 * `dir` is the `commands/` folder next to the module that loads it: the build
 * copies the `.lua` files into `dist/`, so the same URL works from the sources
 * and from the built package.
 */
export function loadLua(dir: URL, name: string): string {
  return expand(dir, name, new Set(), []);
}

function expand(dir: URL, name: string, emitted: Set<string>, stack: string[]): string {
  const file = new URL(`${name}.lua`, dir);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const from = stack.length > 0 ? ` (included by ${stack.at(-1)}.lua)` : '';
    throw new Error(`Lua script ${name}.lua not found in ${dir.pathname}${from}`, { cause: error });
  }
  emitted.add(name);
  const path = [...stack, name];
  return text
    .replace(HEADER, '')
    .trimEnd()
    .replace(INCLUDE, (_, include: string) => {
      if (path.includes(include)) {
        throw new Error(`Lua include cycle: ${[...path, include].map((n) => `${n}.lua`).join(' -> ')}`);
      }
      return emitted.has(include) ? '' : expand(dir, include, emitted, path);
    });
}
