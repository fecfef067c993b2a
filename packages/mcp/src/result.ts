import type { ToolResult } from '@tether/tools';

/** One content block of a tool result, as MCP defines them (what Tether reads of each). */
interface ContentBlock {
  type: string;
  text?: string;
  mimeType?: string;
  data?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; mimeType?: string; text?: string; blob?: string };
}

/** Bytes a base64 string stands for. */
function decodedBytes(base64: string): number {
  return Math.floor((base64.length * 3) / 4);
}

function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text ?? '';
    case 'image':
    case 'audio':
      return `[${block.type} ${block.mimeType ?? ''}, ${decodedBytes(block.data ?? '')} bytes, not shown]`;
    case 'resource_link':
      return `[resource link${block.name ? ` ${block.name}` : ''}: ${block.uri ?? ''}]`;
    case 'resource': {
      const resource = block.resource ?? {};
      if (typeof resource.text === 'string') return `[resource ${resource.uri ?? ''}]\n${resource.text}`;
      return `[resource ${resource.uri ?? ''} ${resource.mimeType ?? ''}, ${decodedBytes(resource.blob ?? '')} bytes, not shown]`;
    }
    default:
      return `[${block.type} content, not shown]`;
  }
}

/**
 * A `tools/call` result as the tool result the model reads: the text of its
 * content blocks in order (images, audio and binary resources described, not
 * shown), else its structured content as JSON; `isError` makes it a failed
 * result (`ERR_TOOL_MCP_FAILED`), worded as the server worded it.
 */
export function formatCallResult(result: Record<string, unknown>, server: string, tool: string): ToolResult {
  let text: string;
  if (Array.isArray(result.content) && result.content.length > 0) {
    text = (result.content as ContentBlock[]).map(blockText).join('\n');
  } else if (result.structuredContent !== undefined) {
    text = JSON.stringify(result.structuredContent);
  } else if (result.toolResult !== undefined) {
    // The protocol's first version answered `toolResult`.
    text = typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult);
  } else {
    text = '(no output)';
  }
  if (result.isError === true) {
    return {
      ok: false,
      code: 'ERR_TOOL_MCP_FAILED',
      content: `The MCP server ${server} reported an error from ${tool}: ${text}`,
    };
  }
  return { ok: true, content: text };
}
