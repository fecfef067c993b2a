export { MemoryIndex, tokenize } from './memory-index.js';
export type { MemoryServiceOptions } from './memory-service.js';
export { MemoryService, memoryEntry } from './memory-service.js';
export type { MemoryListing, MemoryStoreOptions } from './memory-store.js';
export {
  DEFAULT_MEMORY_MAX_BYTES,
  DEFAULT_MEMORY_MAX_ENTRIES,
  FULL_SCOPE_OLDEST,
  MemoryStore,
  preview,
} from './memory-store.js';
