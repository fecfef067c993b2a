export type { AppOptions } from './app.js';
export { buildApp, createApp, createLogger, serverOptions } from './app.js';
export type { ApiConfig, ApiKey } from './config.js';
export { loadApiConfig, parseApiKeys } from './config.js';
export type { ApiErrorCode } from './errors.js';
export { API_ERROR_CODES, API_ERRORS, ApiError } from './errors.js';
export type { ReadTokenIssuer } from './read-token.js';
export { createReadTokens } from './read-token.js';
