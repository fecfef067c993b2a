import { type Static, Type } from '@sinclair/typebox';
import { EXPECTED } from './expected.js';

/**
 * Memory: short entries a run saves (`memory_save`) and finds again
 * (`memory_recall`), kept per tenant and *scope*, and shown to the next runs
 * of the scope in their system prompt. People see and fix them through
 * `/v1/memory/:scope`.
 */

/** Bounds of an entry and of the memory routes; the API, the tools and the store enforce them. */
export const MEMORY_LIMITS = {
  /** Characters of one entry's content. */
  contentMaxChars: 2_000,
  /** Tags of one entry, and characters of one tag. */
  tagsMax: 16,
  tagMaxChars: 64,
  /** Characters of a recall query. */
  queryMaxChars: 1_000,
  /** Entries one recall or one page returns. */
  recallMaxLimit: 50,
  pageMaxLimit: 200,
} as const;

/**
 * A scope name: 1 to 100 letters, digits and `_ . : -` (a session id is one).
 * 100 is the longest path parameter the API's router takes.
 */
export const MEMORY_SCOPE_PATTERN = '^[A-Za-z0-9_.:-]{1,100}$';
export const MemoryScopeSchema = Type.String({
  pattern: MEMORY_SCOPE_PATTERN,
  [EXPECTED]: 'a memory scope of 1 to 100 letters, digits and _ . : -',
});

/** The scope of a run with no scope of its own and no session. */
export const DEFAULT_MEMORY_SCOPE = 'default';

/** A memory entry's id: `mem_` and 26 lowercase Crockford base-32 characters (time-sortable). */
export const MEMORY_ID_PATTERN = '^mem_[0-9a-hjkmnp-tv-z]{26}$';
export const MemoryIdSchema = Type.String({
  pattern: MEMORY_ID_PATTERN,
  [EXPECTED]: 'a memory entry id (they look like mem_ and 26 letters and digits: mem_01jz3k…)',
});

/** The tags of an entry: short labels for finding it again. */
export const MemoryTagsSchema = Type.Array(
  Type.String({ minLength: 1, maxLength: MEMORY_LIMITS.tagMaxChars }),
  { maxItems: MEMORY_LIMITS.tagsMax, uniqueItems: true },
);

/** `CreateRunBody.memory`: the scope the run reads and writes (default: its session's id, else `default`). */
export const RunMemorySchema = Type.Object({ scope: MemoryScopeSchema }, { additionalProperties: false });
export type RunMemory = Static<typeof RunMemorySchema>;

/** One entry, as the API shows it. */
export const MemoryEntrySchema = Type.Object({
  id: Type.String(),
  content: Type.String(),
  tags: Type.Array(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type MemoryEntry = Static<typeof MemoryEntrySchema>;

/** `POST /v1/memory/:scope` body. */
export const CreateMemoryBodySchema = Type.Object(
  {
    content: Type.String({ minLength: 1, maxLength: MEMORY_LIMITS.contentMaxChars }),
    tags: Type.Optional(MemoryTagsSchema),
  },
  { additionalProperties: false },
);
export type CreateMemoryBody = Static<typeof CreateMemoryBodySchema>;

/** `GET /v1/memory/:scope`: newest first, or best first for `?q=`. */
export const MemoryPageSchema = Type.Object({
  scope: Type.String(),
  data: Type.Array(MemoryEntrySchema),
  /** Entries in the scope (all of them, whatever the query). */
  total: Type.Integer({ minimum: 0 }),
  /** Pass as `?cursor=` for the next page; null on the last. */
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});
export type MemoryPage = Static<typeof MemoryPageSchema>;

/** `DELETE /v1/memory/:scope` 200 answer. */
export const ClearMemoryResponseSchema = Type.Object({ deleted: Type.Integer({ minimum: 0 }) });
export type ClearMemoryResponse = Static<typeof ClearMemoryResponseSchema>;

/** An entry as stored and handed to tools (times in epoch ms). */
export interface MemoryRecord {
  id: string;
  content: string;
  tags: string[];
  createdAt: number;
  updatedAt: number;
}

/** An entry to save, or to save over entry `replaces`. */
export interface MemoryDraft {
  content: string;
  tags?: readonly string[] | undefined;
  replaces?: string | undefined;
}

/** One of the oldest entries of a full scope, for the model to pick one to replace. */
export interface MemoryOldest {
  id: string;
  /** The entry's first words. */
  preview: string;
  updatedAt: number;
}

/** What became of a save. */
export type MemorySaveOutcome =
  | { status: 'saved'; record: MemoryRecord; replaced: boolean }
  /** The same content is stored already, as entry `id`. */
  | { status: 'duplicate'; id: string }
  /** `replaces` names no entry of the scope. */
  | { status: 'missing'; id: string }
  /** The scope holds its most entries, or bytes: nothing was saved. */
  | { status: 'full'; limit: 'entries' | 'bytes'; max: number; oldest: MemoryOldest[] };

/**
 * The scope a run reads and writes: the one its body names, else its
 * session's id, else {@link DEFAULT_MEMORY_SCOPE}. A crew child is given its
 * parent's scope in its body.
 */
export function memoryScopeOf(
  body: { memory?: RunMemory | undefined },
  sessionId: string | undefined,
): string {
  return body.memory?.scope ?? sessionId ?? DEFAULT_MEMORY_SCOPE;
}
