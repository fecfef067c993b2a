import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from './connection.js';

/**
 * The names of a script's KEYS and ARGV, in the order its header lists them.
 * `rest` names the list that fills the ARGV after the named ones (`ARGV[n...]`).
 */
export interface ScriptSignature<K extends string, A extends string, R extends string> {
  keys: readonly K[];
  args: readonly A[];
  rest?: R | undefined;
}

/** A call of a script by names: every key, every argument, and the rest list when it has one. */
export interface ScriptCall<K extends string, A extends string, R extends string> {
  keys: { readonly [name in K]: string };
  args: { readonly [name in A]: string | number } & { readonly [name in R]: readonly (string | number)[] };
}

/** The call a script takes. */
export type CallOf<S> = S extends LuaScript<infer K, infer A, infer R, unknown> ? ScriptCall<K, A, R> : never;

/**
 * A Lua script run by its SHA, loaded on first use (and again after a Redis
 * restart or failover flushes the script cache). Callers name its keys and
 * arguments; the script puts them in the order of its signature, which its
 * file's header lists (see `loadLua`), so a position can never drift.
 */
export class LuaScript<K extends string, A extends string, R extends string, Reply> {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
  readonly signature: ScriptSignature<K, A, R>;

  constructor(name: string, source: string, signature: ScriptSignature<K, A, R>) {
    this.name = name;
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
    this.signature = signature;
  }

  async run(redis: RedisClient, call: ScriptCall<K, A, R>): Promise<Reply> {
    const argv = this.#argv(call);
    try {
      return (await redis.evalsha(this.sha, this.signature.keys.length, ...argv)) as Reply;
    } catch (error) {
      if (isNoScript(error))
        return (await redis.eval(this.source, this.signature.keys.length, ...argv)) as Reply;
      throw error;
    }
  }

  /** Adds the script to a pipeline by its SHA; on a NOSCRIPT reply the caller runs it again with `run`. */
  queue(pipeline: ChainableCommander, call: ScriptCall<K, A, R>): void {
    pipeline.evalsha(this.sha, this.signature.keys.length, ...this.#argv(call));
  }

  /** The keys then the arguments, in the signature's order. */
  #argv(call: ScriptCall<K, A, R>): (string | number)[] {
    const { keys, args, rest } = this.signature;
    const argv: (string | number)[] = [];
    for (const key of keys) argv.push(call.keys[key]);
    for (const arg of args) argv.push(call.args[arg]);
    if (rest !== undefined) for (const value of call.args[rest]) argv.push(value);
    return argv;
  }
}

/** Whether Redis answered that it does not know the script (a restart or failover emptied its cache). */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.includes('NOSCRIPT');
}

/** Includes every domain's scripts share (`--- @include "includes/nowMs"`): `redis/lua/`. */
const SHARED_INCLUDES = new URL('./lua/', import.meta.url);

/**
 * The script maker of one domain's `commands/` folder, `dir`: a script is read from it, its includes
 * from it and then from the shared ones (`generated`: includes written by TypeScript), checked
 * against its header when made, and typed with its reply in `Replies`.
 */
export function scriptsIn<Replies>(dir: URL, generated: Readonly<Record<string, string>> = {}) {
  return <N extends keyof Replies & string, K extends string, A extends string, R extends string = never>(
    name: N,
    signature: ScriptSignature<K, A, R>,
  ): LuaScript<K, A, R, Replies[N]> =>
    new LuaScript(name, loadLua([dir, SHARED_INCLUDES], name, signature, generated), signature);
}

/** The header every script file opens with: a Lua long comment, documentation only. */
const HEADER = /^--\[\[[\s\S]*?\]\]\n/;
/** A header line naming a key or an argument: `KEYS[1] record …`, `ARGV[5...] events …`. */
const HEADER_ENTRY = /^[ \t]*(KEYS|ARGV)\[(\d+)(\.\.\.)?\][ \t]+([A-Za-z_][A-Za-z0-9_]*)/gm;
/** A line that includes a shared snippet, as BullMQ writes it: `--- @include "includes/append"`. */
const INCLUDE = /^---[ \t]*@include[ \t]+"([^"]+)"[ \t]*$/gm;

/**
 * Reads the script `name` from `<dir>/<name>.lua`, checks that its header lists
 * the KEYS and ARGV of `signature`, by the same names in the same order, and
 * an Output, and returns the source Redis runs: the header dropped, the trailing
 * newline dropped, and each `--- @include "<path>"` line replaced by the file
 * `<dir>/<path>.lua` (read the same way, its own includes expanded). A file
 * included twice, directly or through another include, is emitted once, where
 * it is first included. An include named in `generated` is that text instead
 * of a file (code generated from TypeScript, such as the lifecycle's statuses).
 *
 * `dirs` is where the files are looked for, in order: the `commands/` folder
 * next to the module that loads it, then folders of includes shared with other
 * modules' scripts. The build copies the `.lua` files into `dist/`, so the same
 * URLs work from the sources and from the built package.
 */
export function loadLua<K extends string, A extends string, R extends string>(
  dirs: URL | readonly URL[],
  name: string,
  signature: ScriptSignature<K, A, R>,
  generated: Readonly<Record<string, string>> = {},
): string {
  const dir = Array.isArray(dirs) ? (dirs as readonly URL[]) : [dirs as URL];
  const text = read(dir, name);
  const header = parseHeader(name, text);
  const expected = { keys: [...signature.keys], args: [...signature.args], rest: signature.rest };
  for (const part of ['keys', 'args', 'rest'] as const) {
    const [listed, named] = [describe(header[part]), describe(expected[part])];
    if (listed !== named)
      throw new Error(`${name}.lua: its header lists ${part} ${listed}, its wrapper ${named}`);
  }
  return expand(dir, name, text, new Set([name]), [name], generated);
}

/** What a script's header lists: its KEYS and ARGV names in order, and the name of the ARGV rest. */
export function parseHeader(name: string, text: string): ScriptSignature<string, string, string> {
  const header = HEADER.exec(text)?.[0];
  if (!header) throw new Error(`${name}.lua: no header (a --[[ … ]] comment listing KEYS, ARGV and Output)`);
  const keys: string[] = [];
  const args: string[] = [];
  let rest: string | undefined;
  for (const [line, list, index, more, entry] of header.matchAll(HEADER_ENTRY)) {
    const names = list === 'KEYS' ? keys : args;
    if (rest !== undefined || (more && list === 'KEYS')) {
      throw new Error(`${name}.lua: "${line.trim()}": only the last ARGV can be a rest (ARGV[n...])`);
    }
    if (Number(index) !== names.length + 1) {
      throw new Error(`${name}.lua: "${line.trim()}" should be ${list}[${names.length + 1}]`);
    }
    if (more) rest = entry;
    else names.push(entry as string);
  }
  if (!/^[ \t]*Output:/m.test(header)) throw new Error(`${name}.lua: its header has no Output:`);
  return { keys, args, rest };
}

function describe(value: readonly string[] | string | undefined): string {
  if (value === undefined) return 'none';
  return typeof value === 'string' ? value : `(${value.join(', ')})`;
}

/** The file `<name>.lua` of the first of `dirs` that has it. */
function read(dirs: readonly URL[], name: string, includedBy?: string): string {
  let missing: unknown;
  for (const dir of dirs) {
    try {
      return readFileSync(new URL(`${name}.lua`, dir), 'utf8');
    } catch (error) {
      missing = error;
    }
  }
  const from = includedBy ? ` (included by ${includedBy}.lua)` : '';
  const where = dirs.map((dir) => dir.pathname).join(' or ');
  throw new Error(`Lua script ${name}.lua not found in ${where}${from}`, { cause: missing });
}

function expand(
  dir: readonly URL[],
  name: string,
  text: string,
  emitted: Set<string>,
  path: string[],
  generated: Readonly<Record<string, string>>,
): string {
  return text
    .replace(HEADER, '')
    .trimEnd()
    .replace(INCLUDE, (_, include: string) => {
      if (path.includes(include)) {
        throw new Error(`Lua include cycle: ${[...path, include].map((n) => `${n}.lua`).join(' -> ')}`);
      }
      if (emitted.has(include)) return '';
      emitted.add(include);
      const source = generated[include];
      if (source !== undefined) return source;
      return expand(dir, include, read(dir, include, name), emitted, [...path, include], generated);
    });
}

/** `text` with each lone surrogate (half of a UTF-16 pair) replaced by U+FFFD (String#toWellFormed). */
export function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/**
 * JSON for a script to decode: Redis's cjson refuses the `\ud800` escape
 * JSON.stringify writes for a lone surrogate (text a model or a user sent),
 * so every string is made well-formed first.
 */
export function luaJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'string' ? wellFormed(item) : item));
}
