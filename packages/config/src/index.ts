export type { Env, LogLevel, SharedConfig } from './config.js';
export { EnvReader, LOG_LEVELS, readSharedConfig } from './config.js';
