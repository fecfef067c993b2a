import type { FileHandle } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { Type } from '@sinclair/typebox';
import { defineTool } from '../define-tool.js';
import { ToolError } from '../errors.js';
import { callSignal, type ToolEnvironment, throwIfCancelled } from '../tool-environment.js';
import type { Tool, ToolSchema } from '../types.js';

/** Parameters of `read_file`. */
export const ReadFileParams = Type.Object(
  {
    path: Type.String({ description: 'Path of the file, relative to the workspace (or absolute inside it)' }),
    offset: Type.Optional(
      Type.Integer({ minimum: 1, description: 'First line to show, 1-based. Default 1.' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, description: 'How many lines to show. Default 2000.' })),
  },
  { additionalProperties: false },
);

/** Catalog entry of `read_file` (toolset `base`). */
export const readFileSchema: ToolSchema<typeof ReadFileParams> = {
  name: 'read_file',
  toolset: 'base',
  description:
    'Read a text file of the workspace, with line numbers. Long files come in pages: use offset and limit (in lines) to read further. Binary files are refused.',
  parameters: ReadFileParams,
};

const CHUNK_BYTES = 64 * 1024;
/** Bytes inspected for a NUL to call a file binary (as git does). */
const BINARY_SNIFF_BYTES = 8000;

interface ReadOptions {
  offset: number;
  limit: number;
  maxBytes: number;
  maxLineChars: number;
  signal: AbortSignal;
}

interface ReadOutcome {
  lines: string[];
  /** Last line number shown (0 when none). */
  lastShown: number;
  /** Lines seen; the file's line count when `more` is false. */
  linesSeen: number;
  /** Whether the file has lines after `lastShown`. */
  more: boolean;
  stoppedBy: 'limit' | 'bytes' | undefined;
  binary: boolean;
  crlf: boolean;
  cutLines: number;
}

/**
 * Streams a file line by line and keeps only the lines to show, so memory
 * stays bounded by the output cap whatever the file's size (a line longer than
 * `maxLineChars` keeps only its start).
 */
async function readNumberedLines(handle: FileHandle, options: ReadOptions): Promise<ReadOutcome> {
  const { offset, limit, maxBytes, maxLineChars, signal } = options;
  const outcome: ReadOutcome = {
    lines: [],
    lastShown: 0,
    linesSeen: 0,
    more: false,
    stoppedBy: undefined,
    binary: false,
    crlf: false,
    cutLines: 0,
  };
  const buffer = Buffer.alloc(CHUNK_BYTES);
  const decoder = new StringDecoder('utf8');
  let outBytes = 0;
  let current = '';
  let currentChars = 0;
  let first = true;

  /** Ends the current line; returns false when reading can stop. */
  const endLine = (): boolean => {
    outcome.linesSeen++;
    let text = current;
    let chars = currentChars;
    current = '';
    currentChars = 0;
    if (chars <= maxLineChars + 1 && text.endsWith('\r')) {
      text = text.slice(0, -1);
      chars--;
      outcome.crlf = true;
    }
    if (outcome.linesSeen < offset) return true;
    if (outcome.stoppedBy !== undefined) {
      outcome.more = true;
      return false;
    }
    let shown = text;
    if (chars > maxLineChars) {
      shown = `${text.slice(0, maxLineChars)} [... ${chars - maxLineChars} more characters]`;
      outcome.cutLines++;
    }
    const line = `${String(outcome.linesSeen).padStart(6, ' ')}\t${shown}`;
    const bytes = Buffer.byteLength(line) + 1;
    if (outcome.lines.length > 0 && outBytes + bytes > maxBytes) {
      outcome.stoppedBy = 'bytes';
      outcome.more = true;
      return false;
    }
    outcome.lines.push(line);
    outBytes += bytes;
    outcome.lastShown = outcome.linesSeen;
    if (outcome.lines.length >= limit) outcome.stoppedBy = 'limit';
    return true;
  };

  const append = (piece: string): void => {
    if (current.length <= maxLineChars) current += piece.slice(0, maxLineChars + 1 - current.length);
    currentChars += piece.length;
  };

  for (;;) {
    throwIfCancelled(signal, 'read_file');
    const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, null);
    if (bytesRead === 0) break;
    const bytes = buffer.subarray(0, bytesRead);
    if (first && bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
      outcome.binary = true;
      return outcome;
    }
    let text = decoder.write(bytes);
    if (first && text.startsWith('\uFEFF')) text = text.slice(1);
    first = false;
    let start = 0;
    for (let newline = text.indexOf('\n'); newline !== -1; newline = text.indexOf('\n', start)) {
      append(text.slice(start, newline));
      start = newline + 1;
      if (!endLine()) return outcome;
    }
    append(text.slice(start));
  }
  append(decoder.end());
  if (currentChars > 0) endLine();
  return outcome;
}

/** Makes `read_file` for a run. */
export function createReadFileTool(environment: ToolEnvironment): Tool {
  const { workspace, limits } = environment;
  return defineTool(readFileSchema, async (args, call) => {
    const signal = callSignal(environment, call.signal);
    throwIfCancelled(signal, 'read_file');
    const target = await workspace.resolve(args.path);
    const handle = await workspace.openFile(target);
    const offset = args.offset ?? 1;
    let outcome: ReadOutcome;
    try {
      outcome = await readNumberedLines(handle, {
        offset,
        limit: args.limit ?? limits.readFileDefaultLines,
        maxBytes: limits.readFileMaxBytes,
        maxLineChars: limits.readFileMaxLineChars,
        signal,
      });
    } finally {
      await handle.close();
    }
    const name = JSON.stringify(target.display);
    if (outcome.binary) {
      throw new ToolError(
        'ERR_TOOL_FILE_BINARY',
        `${name} is a binary file (it contains NUL bytes); read_file only shows text. Inspect it with bash instead (for example \`file\` or \`xxd | head\`).`,
      );
    }
    if (outcome.linesSeen === 0) return { ok: true, content: `${name} is empty (0 lines).` };
    if (outcome.lines.length === 0) {
      throw new ToolError(
        'ERR_TOOL_OFFSET_OUT_OF_RANGE',
        `offset ${offset} is past the end of ${name}, which has ${outcome.linesSeen} line(s). Use an offset between 1 and ${outcome.linesSeen}.`,
      );
    }
    const notes: string[] = [];
    const next = outcome.lastShown + 1;
    if (outcome.stoppedBy === 'bytes') {
      notes.push(
        `[Output capped at ${limits.readFileMaxBytes} bytes: showed lines ${offset}-${outcome.lastShown}. Call read_file with offset=${next} to continue.]`,
      );
    } else if (outcome.more) {
      notes.push(
        `[Showed lines ${offset}-${outcome.lastShown}; the file continues. Call read_file with offset=${next} to read more.]`,
      );
    } else if (offset > 1) {
      notes.push(`[Showed lines ${offset}-${outcome.lastShown} of ${outcome.linesSeen}.]`);
    }
    if (outcome.cutLines > 0) {
      notes.push(
        `[${outcome.cutLines} line(s) longer than ${limits.readFileMaxLineChars} characters were cut.]`,
      );
    }
    if (outcome.crlf) notes.push('[The file uses CRLF line endings; the \\r characters are not shown.]');
    const body = outcome.lines.join('\n');
    return { ok: true, content: notes.length === 0 ? body : `${body}\n${notes.join('\n')}` };
  });
}
