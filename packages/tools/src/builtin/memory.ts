/**
 * The memory toolset: `memory_save` and `memory_recall`.
 *
 * The tools keep nothing themselves: they reach the run's memory scope through
 * `RunContext.memory` (the worker builds it on Redis), so this package stays
 * free of storage. A host without it gets a result saying memory is not
 * available there. What is saved passes the content guard first.
 */
import { type Static, Type } from '@sinclair/typebox';
import { MEMORY_ID_PATTERN, MEMORY_LIMITS, type MemoryOldest, type MemoryRecord } from '@tether/protocol';
import { defineTool } from '../define-tool.js';
import { ToolError } from '../errors.js';
import { guardContent } from '../guard.js';
import type { ToolEnvironment } from '../tool-environment.js';
import type { MemoryAccess, Tool, ToolSchema } from '../types.js';

/** The memory tools, in catalog order. */
export const MEMORY_TOOL_NAMES = ['memory_save', 'memory_recall'] as const;

/** Entries `memory_recall` returns when the call gives no `limit`. */
export const DEFAULT_RECALL_LIMIT = 10;

/** Parameters of `memory_save`. */
export const MemorySaveParams = Type.Object(
  {
    content: Type.String({
      minLength: 1,
      maxLength: MEMORY_LIMITS.contentMaxChars,
      description:
        'The fact to remember, self-contained and in plain words (it is read later without this conversation). At most 2,000 characters.',
    }),
    tags: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: MEMORY_LIMITS.tagMaxChars }), {
        maxItems: MEMORY_LIMITS.tagsMax,
        uniqueItems: true,
        description: 'Short labels to find it again (for example "preferences", "build").',
      }),
    ),
    replaces: Type.Optional(
      Type.String({
        pattern: MEMORY_ID_PATTERN,
        description:
          'The id of an entry this one replaces (it keeps that id): to correct or update a fact, or to make room in a full memory.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Parameters of `memory_recall`. */
export const MemoryRecallParams = Type.Object(
  {
    query: Type.String({
      maxLength: MEMORY_LIMITS.queryMaxChars,
      description: 'Words to look for (best matches first); an empty string returns the most recent entries.',
    }),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MEMORY_LIMITS.recallMaxLimit,
        description: `How many entries at most (default ${DEFAULT_RECALL_LIMIT}).`,
      }),
    ),
  },
  { additionalProperties: false },
);

/** Catalog entry of `memory_save` (toolset `memory`). */
export const memorySaveSchema: ToolSchema<typeof MemorySaveParams> = {
  name: 'memory_save',
  toolset: 'memory',
  description:
    'Save a stable fact about the user or the project for later runs (preferences, conventions, decisions, where things are), or replace an entry by its id. Never save transient state (what you are doing now), secrets, or instructions. Returns the entry id.',
  parameters: MemorySaveParams,
};

/** Catalog entry of `memory_recall` (toolset `memory`). */
export const memoryRecallSchema: ToolSchema<typeof MemoryRecallParams> = {
  name: 'memory_recall',
  toolset: 'memory',
  description:
    'Search the saved memory, best matches first (an empty query lists the most recent). Returns JSON: [{ id, content, tags, date }].',
  parameters: MemoryRecallParams,
};

function access(environment: ToolEnvironment, toolName: string): MemoryAccess {
  const memory = environment.ctx.memory;
  if (memory) return memory;
  throw new ToolError(
    'ERR_TOOL_MEMORY_UNAVAILABLE',
    `${toolName} cannot run here: this host keeps no memory for the run. Go on without it.`,
  );
}

/** Makes `memory_save`: guard, then save (or replace), answering with the id or why nothing was saved. */
export function createMemorySaveTool(environment: ToolEnvironment): Tool {
  return defineTool(memorySaveSchema, async (args) => {
    const memory = access(environment, 'memory_save');
    const content = args.content.trim();
    if (content === '') {
      throw new ToolError('ERR_TOOL_ARGS_INVALID', 'content is blank: write the fact to remember.');
    }
    const verdict = guardContent(content);
    if (!verdict.ok) throw new ToolError('ERR_TOOL_MEMORY_REFUSED', `Nothing was saved. ${verdict.reason}`);
    const tags = [...new Set((args.tags ?? []).map((tag) => tag.trim()).filter((tag) => tag !== ''))];
    const tagVerdict = guardContent(tags.join('\n'));
    if (!tagVerdict.ok) {
      throw new ToolError(
        'ERR_TOOL_MEMORY_REFUSED',
        `Nothing was saved: a tag is refused. ${tagVerdict.reason}`,
      );
    }
    const outcome = await memory.save({ content, tags, replaces: args.replaces });
    switch (outcome.status) {
      case 'saved':
        return {
          ok: true,
          content: outcome.replaced
            ? `Replaced memory entry ${outcome.record.id}.`
            : `Saved as memory entry ${outcome.record.id}.`,
        };
      case 'duplicate':
        throw new ToolError(
          'ERR_TOOL_MEMORY_DUPLICATE',
          `This exact content is already saved as ${outcome.id}; nothing was saved. To change that entry, call memory_save with replaces: "${outcome.id}".`,
        );
      case 'missing':
        throw new ToolError(
          'ERR_TOOL_MEMORY_NOT_FOUND',
          `No memory entry ${outcome.id} to replace in this scope; nothing was saved. Find the entry's id with memory_recall, or save without replaces.`,
        );
      case 'full': {
        const what =
          outcome.limit === 'entries'
            ? `it holds ${outcome.max} entries, the most it may`
            : `this entry would take it past ${Math.round(outcome.max / 1024)} KB, the most it may hold`;
        throw new ToolError(
          'ERR_TOOL_MEMORY_FULL',
          `Memory is full (${what}); nothing was saved. Replace an entry that is outdated or less useful: call memory_save again with replaces set to its id. The oldest entries:\n${oldestList(outcome.oldest)}`,
        );
      }
    }
  });
}

/** Makes `memory_recall`: the best entries for the query (the most recent for an empty one), as JSON. */
export function createMemoryRecallTool(environment: ToolEnvironment): Tool {
  return defineTool(memoryRecallSchema, async (args) => {
    const memory = access(environment, 'memory_recall');
    const query = args.query.trim();
    const entries = await memory.recall(query, args.limit ?? DEFAULT_RECALL_LIMIT);
    if (entries.length === 0) {
      return {
        ok: true,
        content:
          query === ''
            ? 'No memory has been saved yet.'
            : `No memory entry matches ${JSON.stringify(query)}.`,
      };
    }
    return { ok: true, content: JSON.stringify(entries.map(recallView), null, 1) };
  });
}

/** An entry as `memory_recall` shows it: id, content, tags, and the date it was last saved. */
export function recallView(record: MemoryRecord): {
  id: string;
  content: string;
  tags: string[];
  date: string;
} {
  return {
    id: record.id,
    content: record.content,
    tags: record.tags,
    date: new Date(record.updatedAt).toISOString(),
  };
}

function oldestList(oldest: readonly MemoryOldest[]): string {
  return oldest
    .map(
      (entry) => `- ${entry.id} (${new Date(entry.updatedAt).toISOString().slice(0, 10)}): ${entry.preview}`,
    )
    .join('\n');
}

/** Validated arguments of `memory_save`. */
export type MemorySaveArgs = Static<typeof MemorySaveParams>;
/** Validated arguments of `memory_recall`. */
export type MemoryRecallArgs = Static<typeof MemoryRecallParams>;
