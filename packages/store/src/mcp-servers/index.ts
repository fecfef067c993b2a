export type {
  McpServerStoreOptions,
  McpServerWrite,
  StoredMcpServer,
} from './mcp-server-store.js';
export { McpServerStore, mcpServerView } from './mcp-server-store.js';
