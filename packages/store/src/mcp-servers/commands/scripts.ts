import { scriptsIn } from '../../redis/lua-script.js';

/**
 * The MCP servers' Lua scripts, one file each in this folder: every change that must happen together
 * is one of them. Each file's header lists its KEYS, ARGV and Output; each
 * wrapper here names the same keys and arguments in the same order (checked
 * when the file is loaded, so a wrapper that disagrees with its header fails
 * at import) and types the Output. Keys are named as in the key builders
 * (redis/keys.ts), so a caller can pass them as they are.
 */
export const COMMANDS = new URL('./', import.meta.url);

/** What each script replies, as ioredis hands it over (Lua's false is null). */
export interface Replies {
  saveMcpServer: ['created' | 'replaced', string] | ['full', number];
}

const script = scriptsIn<Replies>(COMMANDS);

/** saveMcpServer.lua: a tenant's MCP server registered or replaced, within the tenant's limit. */
export const saveMcpServer = script('saveMcpServer', {
  keys: ['servers'],
  args: ['name', 'server', 'max'],
});
