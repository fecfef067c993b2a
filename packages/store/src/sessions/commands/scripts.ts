import { scriptsIn } from '../../redis/lua-script.js';

/**
 * The sessions' Lua scripts, one file each in this folder: every change that must happen together
 * is one of them. Each file's header lists its KEYS, ARGV and Output; each
 * wrapper here names the same keys and arguments in the same order (checked
 * when the file is loaded, so a wrapper that disagrees with its header fails
 * at import) and types the Output. Keys are named as in the key builders
 * (redis/keys.ts), so a caller can pass them as they are.
 */
export const COMMANDS = new URL('./', import.meta.url);

/** What each script replies, as ioredis hands it over (Lua's false is null). */
export interface Replies {
  deleteSession: 'ok' | 'missing' | 'busy' | 'changed';
}

const script = scriptsIn<Replies>(COMMANDS);

/** deleteSession.lua: a session's own keys, once it has no live run. */
export const deleteSession = script('deleteSession', {
  keys: ['sessionRecord', 'sessionRuns', 'sessionQueue', 'transcript', 'files'],
  args: ['sessionId', 'runCount'],
});
