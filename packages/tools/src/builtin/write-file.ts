import { Type } from '@sinclair/typebox';
import { defineTool } from '../define-tool.js';
import { ToolError } from '../errors.js';
import { callSignal, type ToolEnvironment, throwIfCancelled } from '../tool-environment.js';
import type { Tool, ToolSchema } from '../types.js';

/** Parameters of `write_file`. */
export const WriteFileParams = Type.Object(
  {
    path: Type.String({ description: 'Path of the file, relative to the workspace (or absolute inside it)' }),
    content: Type.String({ description: 'The complete new content of the file' }),
  },
  { additionalProperties: false },
);

/** Catalog entry of `write_file` (toolset `base`). */
export const writeFileSchema: ToolSchema<typeof WriteFileParams> = {
  name: 'write_file',
  toolset: 'base',
  description:
    'Create a file, or replace a whole file, with the given content. Parent directories are created. To change part of an existing file, use patch instead.',
  parameters: WriteFileParams,
};

/** Lines in `text` as an editor counts them: a final newline does not start a new line. */
export function countLines(text: string): number {
  if (text === '') return 0;
  let lines = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++;
  return text.endsWith('\n') ? lines - 1 : lines;
}

/** Makes `write_file` for a run. */
export function createWriteFileTool(environment: ToolEnvironment): Tool {
  const { workspace, limits } = environment;
  return defineTool(writeFileSchema, async (args, call) => {
    throwIfCancelled(callSignal(environment, call.signal), 'write_file');
    const data = Buffer.from(args.content, 'utf8');
    if (data.length > limits.writeFileMaxBytes) {
      throw new ToolError(
        'ERR_TOOL_FILE_TOO_LARGE',
        `The content is ${data.length} bytes; write_file accepts at most ${limits.writeFileMaxBytes}. Write the file in parts (write_file then patch to append), or generate it with a bash command.`,
      );
    }
    const target = await workspace.resolve(args.path);
    const { created } = await workspace.writeFileAtomic(target, data);
    const lines = countLines(args.content);
    return {
      ok: true,
      content: `${created ? 'Created' : 'Overwrote'} ${JSON.stringify(target.display)}: wrote ${data.length} bytes (${lines} line${lines === 1 ? '' : 's'}).`,
    };
  });
}
