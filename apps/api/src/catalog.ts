import type { ToolCatalog } from '@tether/protocol';
import { BUILTIN_TOOL_NAMES, getSchemasByToolset, TOOLSET_DEFAULTS, TOOLSETS } from '@tether/tools';

const builtins: ReadonlySet<string> = new Set(BUILTIN_TOOL_NAMES);

/** The tools a run of these toolsets gets: built-in tools only, as the worker makes them. */
function toolsOf(toolset: string) {
  return getSchemasByToolset(toolset).filter((schema) => builtins.has(schema.name));
}

/**
 * The toolsets a run may ask for: the known ones that have tools today (a
 * toolset reserved without tools yet is refused).
 */
export function availableToolsets(): string[] {
  return TOOLSETS.filter((toolset) => toolsOf(toolset).length > 0);
}

/** The built-in tool names a run of `toolsets` gets (its client tools may not take them). */
export function builtinToolNames(toolsets: readonly string[] = TOOLSET_DEFAULTS): string[] {
  return [...new Set(toolsets.flatMap((toolset) => toolsOf(toolset).map((schema) => schema.name)))];
}

/** `GET /v1/tools`: toolsets, defaults, and every available tool with its JSON Schema. */
export function toolCatalog(): ToolCatalog {
  const toolsets = availableToolsets();
  return {
    toolsets,
    defaultToolsets: [...TOOLSET_DEFAULTS],
    tools: toolsets.flatMap((toolset) =>
      toolsOf(toolset).map((schema) => ({
        name: schema.name,
        toolset: schema.toolset,
        description: schema.description,
        // A TypeBox schema is JSON Schema plus symbol keys: a JSON round trip leaves the JSON Schema.
        parameters: JSON.parse(JSON.stringify(schema.parameters)) as Record<string, unknown>,
      })),
    ),
  };
}
