import { LuaScript, loadLua } from './lua-script.js';

/**
 * The run's Lua scripts, one file each in `commands/`: every change that must
 * happen together (a status and its event, an answer and its event) is one of
 * them, on the run's own keys. Each file's header lists its KEYS, ARGV and reply.
 */
const COMMANDS = new URL('./commands/', import.meta.url);

function script(name: string): LuaScript {
  return new LuaScript(name, loadLua(COMMANDS, name));
}

/** commands/appendEvents.lua */
export const appendEvents = script('appendEvents');
/** commands/createRun.lua */
export const createRun = script('createRun');
/** commands/claimRun.lua */
export const claimRun = script('claimRun');
/** commands/saveCheckpoint.lua */
export const saveCheckpoint = script('saveCheckpoint');
/** commands/suspendRun.lua */
export const suspendRun = script('suspendRun');
/** commands/answerClarify.lua */
export const answerClarify = script('answerClarify');
/** commands/resolveClarify.lua */
export const resolveClarify = script('resolveClarify');
/** commands/finalizeRun.lua */
export const finalizeRun = script('finalizeRun');
/** commands/retryRun.lua */
export const retryRun = script('retryRun');
/** commands/requestCancel.lua */
export const requestCancel = script('requestCancel');
/** commands/setStatus.lua */
export const setStatus = script('setStatus');
