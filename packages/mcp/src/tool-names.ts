import { createHash } from 'node:crypto';
import { MCP_TOOL_SEPARATOR } from '@tether/protocol';

/** The longest tool name model APIs take (OpenAI's `^[a-zA-Z0-9_-]{1,64}$`). */
export const MODEL_TOOL_NAME_MAX = 64;

/**
 * The name the model sees for tool `tool` of server `server`:
 * `<server>__<tool>`, where characters model APIs refuse in a tool name
 * (anything but letters, digits, `_` and `-`; MCP allows `.` and `/`) become
 * `_`. A name that is too long, or taken already (by a built-in or client
 * tool, or another MCP tool once cleaned up), is cut and given a short hash of
 * the full name, so it stays the same from one attempt to the next.
 * `renamed` says the model sees something else than `<server>__<tool>`.
 */
export function modelToolName(
  server: string,
  tool: string,
  taken: ReadonlySet<string>,
): { name: string; renamed: boolean } {
  const full = `${server}${MCP_TOOL_SEPARATOR}${tool}`;
  const clean = full.replace(/[^A-Za-z0-9_-]/g, '_');
  if (clean.length <= MODEL_TOOL_NAME_MAX && !taken.has(clean))
    return { name: clean, renamed: clean !== full };
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8);
  return { name: `${clean.slice(0, MODEL_TOOL_NAME_MAX - hash.length - 1)}_${hash}`, renamed: true };
}
