import { scriptsIn } from '../../redis/lua-script.js';

/**
 * The skills' Lua scripts, one file each in this folder: every change that must happen together
 * is one of them. Each file's header lists its KEYS, ARGV and Output; each
 * wrapper here names the same keys and arguments in the same order (checked
 * when the file is loaded, so a wrapper that disagrees with its header fails
 * at import) and types the Output. Keys are named as in the key builders
 * (redis/keys.ts), so a caller can pass them as they are.
 */
export const COMMANDS = new URL('./', import.meta.url);

/** What each script replies, as ioredis hands it over (Lua's false is null). */
export interface Replies {
  saveSkill:
    | ['ok', string, 0 | 1]
    | ['exists' | 'missing' | 'pinned']
    | ['changed', number]
    | ['count' | 'bytes' | 'files', number, number]
    | ['no_file', string]
    | ['clash', string, string];
  deleteSkill: 'ok' | 'missing' | 'pinned';
  readSkill: [string, string, ...(string | number)[]] | null;
}

const script = scriptsIn<Replies>(COMMANDS);

/** saveSkill.lua: a tenant's skill created, replaced or changed, within the tenant's limits. */
export const saveSkill = script('saveSkill', {
  keys: ['index', 'files', 'totals'],
  args: [
    'name',
    'mode',
    'description',
    'byAgent',
    'pinned',
    'ifVersion',
    'maxCount',
    'maxBytes',
    'maxFiles',
    'setCount',
  ],
  rest: 'rest',
});

/** deleteSkill.lua: a tenant's skill deleted (not a pinned one, for the agent). */
export const deleteSkill = script('deleteSkill', {
  keys: ['index', 'files', 'totals'],
  args: ['name', 'byAgent'],
});

/** readSkill.lua: a skill's summary, SKILL.md, and its files' paths and sizes. */
export const readSkill = script('readSkill', {
  keys: ['index', 'files'],
  args: ['name'],
});
