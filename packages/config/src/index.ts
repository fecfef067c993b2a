export type { Env, LogLevel, SharedConfig } from './config.js';
export { EnvReader, LOG_LEVELS, readSharedConfig } from './config.js';
export type { ConfigErrorCode } from './errors.js';
export { CONFIG_ERRORS, ConfigError } from './errors.js';
export { EXIT_CONFIG, loadOrExit } from './load-or-exit.js';
