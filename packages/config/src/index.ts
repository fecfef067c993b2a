export type {
  Env,
  LogLevel,
  RedisNodeAddress,
  ScheduleConfig,
  SharedConfig,
  WebhookConfig,
} from './config.js';
export { clusterStartNote, EnvReader, LOG_LEVELS, parseClusterNodes, readSharedConfig } from './config.js';
export type { ConfigErrorCode } from './errors.js';
export { CONFIG_ERRORS, ConfigError } from './errors.js';
export { EXIT_CONFIG, loadOrExit } from './load-or-exit.js';
export { readMcpServersFile } from './mcp-servers.js';
export { readSecrets, SECRETS_KEY_ENV, SecretBox } from './secret-box.js';
export type { ShutdownLog, ShutdownOptions } from './shutdown-handler.js';
export { EXIT_SECOND_SIGNAL, shutdownHandler } from './shutdown-handler.js';
export { parseTenantBudgets } from './tenant-budgets.js';
