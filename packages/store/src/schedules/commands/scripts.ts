import { scriptsIn } from '../../redis/lua-script.js';

/**
 * The schedules' Lua scripts, one file each in this folder. Each file's header lists its KEYS,
 * ARGV and Output; each wrapper here names the same keys and arguments in the same order (checked
 * when the file is loaded) and types the Output. Keys are named as in the key builders.
 */
export const COMMANDS = new URL('./', import.meta.url);

/** What each script replies, as ioredis hands it over. */
export interface Replies {
  saveSchedule: 'ok' | 'exists' | 'full' | 'missing';
}

const script = scriptsIn<Replies>(COMMANDS);

/** saveSchedule.lua: a tenant's schedule added (within its limit, under a free name) or replaced. */
export const saveSchedule = script('saveSchedule', {
  keys: ['index'],
  args: ['name', 'schedule', 'mode', 'max'],
});
