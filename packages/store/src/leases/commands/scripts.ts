import { scriptsIn } from '../../redis/lua-script.js';

/**
 * The leases' Lua scripts, one file each in this folder: every change that must happen together
 * is one of them. Each file's header lists its KEYS, ARGV and Output; each
 * wrapper here names the same keys and arguments in the same order (checked
 * when the file is loaded, so a wrapper that disagrees with its header fails
 * at import) and types the Output. Keys are named as in the key builders
 * (redis/keys.ts), so a caller can pass them as they are.
 */
export const COMMANDS = new URL('./', import.meta.url);

/** What each script replies, as ioredis hands it over (Lua's false is null). */
export interface Replies {
  holdLease: 1 | 0;
  releaseLease: 1 | 0;
}

const script = scriptsIn<Replies>(COMMANDS);

/** holdLease.lua: a lease taken when free (SET NX PX), or renewed by its holder. */
export const holdLease = script('holdLease', {
  keys: ['lease'],
  args: ['holder', 'ttlMs'],
});

/** releaseLease.lua: a lease given up by its holder. */
export const releaseLease = script('releaseLease', {
  keys: ['lease'],
  args: ['holder'],
});
