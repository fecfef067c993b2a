import { scriptsIn } from '../../redis/lua-script.js';

/**
 * The memory's Lua scripts, one file each in this folder: every change that must happen together
 * is one of them. Each file's header lists its KEYS, ARGV and Output; each
 * wrapper here names the same keys and arguments in the same order (checked
 * when the file is loaded, so a wrapper that disagrees with its header fails
 * at import) and types the Output. Keys are named as in the key builders
 * (redis/keys.ts), so a caller can pass them as they are.
 */
export const COMMANDS = new URL('./', import.meta.url);

/** What each script replies, as ioredis hands it over (Lua's false is null). */
export interface Replies {
  memorySave:
    | ['saved', string, string, string, number]
    | ['duplicate' | 'missing', string]
    | ['full', 'entries' | 'bytes', ...string[]];
  memoryDelete: 1 | 0;
  memoryClear: number;
  memoryChanges: [number] | [number, 'changes' | 'all' | 'reset', ...string[]];
}

const script = scriptsIn<Replies>(COMMANDS);

/** memorySave.lua: a memory entry saved or replaced, unless a duplicate, gone or past the scope's limits. */
export const memorySave = script('memorySave', {
  keys: ['entries', 'order', 'digests', 'meta', 'log'],
  args: ['id', 'replaces', 'content', 'body', 'maxEntries', 'maxBytes', 'oldest'],
});

/** memoryDelete.lua: one memory entry deleted. */
export const memoryDelete = script('memoryDelete', {
  keys: ['entries', 'order', 'digests', 'meta', 'log'],
  args: ['id'],
});

/** memoryClear.lua: every entry of a memory scope deleted (its version goes on counting). */
export const memoryClear = script('memoryClear', {
  keys: ['entries', 'order', 'digests', 'meta', 'log'],
  args: [],
});

/** memoryChanges.lua: what a reader's copy of a memory scope lacks since its version. */
export const memoryChanges = script('memoryChanges', {
  keys: ['entries', 'meta', 'log'],
  args: ['since'],
});
