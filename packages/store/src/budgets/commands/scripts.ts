import { scriptsIn } from '../../redis/lua-script.js';

/**
 * The usage ledger's Lua scripts, one file each in this folder. Each file's header lists its KEYS,
 * ARGV and Output; each wrapper here names the same keys and arguments in the same order (checked
 * when the file is loaded) and types the Output.
 */
export const COMMANDS = new URL('./', import.meta.url);

/** What each script replies, as ioredis hands it over. */
export interface Replies {
  recordUsage: [number, number, number, number];
}

const script = scriptsIn<Replies>(COMMANDS);

/** recordUsage.lua: one model turn's usage added to its tenant's day and month, atomically. */
export const recordUsage = script('recordUsage', {
  keys: ['day', 'month'],
  args: ['ttlSeconds'],
  rest: 'increments',
});
