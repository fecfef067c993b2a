import type { MemoryPromptBlock } from '@tether/agent';
import { memoryScopeOf } from '@tether/protocol';
import type { RunSpec } from '@tether/store/runs';
import { MEMORY_TOOL_NAMES, recallView } from '@tether/tools';
import type { AttemptContext } from './context.js';

/**
 * The memory scope of a run with a memory tool: the one its body names (a
 * crew child's is its parent's), else its session's id, else `default`; the
 * tenant is the run record's. Undefined for a run without the toolset, or in
 * a worker without memory.
 */
export function memoryScopeFor(
  ctx: Pick<AttemptContext, 'memory'>,
  spec: RunSpec,
  sessionId: string | undefined,
  toolNames: readonly string[],
): string | undefined {
  if (!ctx.memory || !MEMORY_TOOL_NAMES.some((name) => toolNames.includes(name))) return undefined;
  return memoryScopeOf(spec, sessionId);
}

/** The scope's most recent entries for the run's first system prompt, within `TETHER_MEMORY_PROMPT_CHARS`. */
export async function memoryPrompt(
  ctx: Pick<AttemptContext, 'memory' | 'config'>,
  tenant: string,
  scope: string,
): Promise<MemoryPromptBlock | undefined> {
  if (!ctx.memory || ctx.config.memoryPromptChars === 0) return undefined;
  const recent = await ctx.memory.recent(tenant, scope, ctx.config.memoryPromptChars);
  return { entries: recent.records.map(recallView), cut: recent.cut, more: recent.more };
}
