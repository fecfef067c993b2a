import { Type } from '@sinclair/typebox';
import {
  APPROXIMATE_STRATEGIES,
  type FuzzyErrorCode,
  type FuzzyMatchResult,
  fuzzyFindAll,
  fuzzyReplace,
  type StrategyName,
} from '@tether/fuzzy-match';
import { structuredPatch } from 'diff';
import { defineTool } from '../define-tool.js';
import { ToolError, type ToolErrorCode } from '../errors.js';
import { callSignal, type ToolEnvironment, throwIfCancelled } from '../tool-environment.js';
import type { Locale, Tool, ToolSchema } from '../types.js';

/** Parameters of `patch`, as the design's 4.1. */
export const PatchParams = Type.Object(
  {
    path: Type.String({ description: 'Path of the file, relative to the workspace (or absolute inside it)' }),
    old_string: Type.String({
      description:
        'The text to find: enough surrounding lines to match one place. Indentation need not be exact.',
    }),
    new_string: Type.String({ description: 'The text to put in its place' }),
    replace_all: Type.Optional(
      Type.Boolean({ description: 'Replace every match instead of requiring exactly one. Default false.' }),
    ),
  },
  { additionalProperties: false },
);

/** Catalog entry of `patch` (toolset `base`). */
export const patchSchema: ToolSchema<typeof PatchParams> = {
  name: 'patch',
  toolset: 'base',
  description:
    'Change part of an existing file: replace old_string with new_string. old_string must match one place (or set replace_all); whitespace, indentation and quote differences are tolerated. Returns a unified diff. Prefer it to write_file for edits.',
  parameters: PatchParams,
};

const BOM = '\uFEFF';
/** Longest the diff of a patch may take to compute before it is left out. */
const DIFF_TIMEOUT_MS = 1000;

const FUZZY_CODES = {
  EMPTY_SEARCH: 'ERR_TOOL_PATCH_EMPTY_SEARCH',
  NO_MATCH: 'ERR_TOOL_PATCH_NO_MATCH',
  AMBIGUOUS: 'ERR_TOOL_PATCH_AMBIGUOUS',
  FUZZY_REPLACE_ALL: 'ERR_TOOL_PATCH_FUZZY_REPLACE_ALL',
  IDENTICAL: 'ERR_TOOL_PATCH_IDENTICAL',
  ESCAPE_DRIFT: 'ERR_TOOL_PATCH_ESCAPE_DRIFT',
} as const satisfies Record<FuzzyErrorCode, ToolErrorCode>;

/**
 * The headline of a refused patch. For no match and several matches it is the
 * design's 4.3 wording in the run's language; the matcher's detail (closest
 * lines, match lines) follows it.
 */
function refusal(code: keyof typeof FUZZY_CODES, file: string, count: number, locale: Locale): string {
  if (locale === 'zh' && code === 'NO_MATCH') return `未找到匹配，请检查 old_string（${file} 未修改）。`;
  if (locale === 'zh' && code === 'AMBIGUOUS') {
    return `找到 ${count} 处匹配，请提供更多上下文或设置 replace_all=true（${file} 未修改）。`;
  }
  switch (code) {
    case 'NO_MATCH':
      return `No match for old_string in ${file}; the file was not changed.`;
    case 'AMBIGUOUS':
      return `Found ${count} matches in ${file}; provide more context or set replace_all=true. The file was not changed.`;
    default:
      return `${file} was not changed.`;
  }
}

/** A unified diff of the change, at most `maxLines` lines of hunks. */
export function shortDiff(file: string, before: string, after: string, maxLines: number): string {
  const patch = structuredPatch(file, file, before, after, undefined, undefined, {
    context: 3,
    stripTrailingCr: true,
    timeout: DIFF_TIMEOUT_MS,
  });
  if (patch === undefined) return '(the diff is too large to show; read the file to check the change)';
  const lines = [`--- a/${file}`, `+++ b/${file}`];
  let shown = 0;
  let total = 0;
  for (const hunk of patch.hunks) {
    const hunkLines = [
      `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`,
      ...hunk.lines,
    ];
    total += hunkLines.length;
    for (const line of hunkLines) {
      if (shown >= maxLines) break;
      lines.push(line);
      shown++;
    }
  }
  if (total > shown) lines.push(`[... ${total - shown} more diff lines not shown]`);
  return lines.join('\n');
}

/**
 * Whether applying the patch again would be a no-op: `old_string` is gone and
 * `new_string` is present (found exactly or by a strategy that does not guess).
 */
function alreadyApplied(content: string, newString: string): boolean {
  if (newString.trim() === '') return false;
  const found = fuzzyFindAll(content, newString);
  return found.length > 0 && !APPROXIMATE_STRATEGIES.includes(found[0]?.strategy as StrategyName);
}

/**
 * Whether the one exact match of `old_string` already sits inside a copy of
 * `new_string` (an insertion that keeps old_string, sent twice).
 */
function insertionAlreadyApplied(
  content: string,
  oldString: string,
  newString: string,
  match: FuzzyMatchResult,
): boolean {
  if (match.strategy !== 'exact') return false;
  const offset = newString.indexOf(oldString);
  if (offset === -1) return false;
  const start = match.startIndex - offset;
  return start >= 0 && content.startsWith(newString, start);
}

/** The arguments of a patch, as `patch` takes them. */
export interface TextPatchArgs {
  old_string: string;
  new_string: string;
  replace_all?: boolean | undefined;
}

/**
 * What a patch makes of a text: `changed` with the new content, or not (it was
 * applied already); `report` is the result for the model (the strategy, a
 * warning for an approximate match, a short diff; or why nothing changed).
 */
export type PatchedText =
  | { changed: true; content: string; report: string }
  | { changed: false; report: string };

/**
 * The rules of `patch` on a text, with no file: `fuzzyReplace` from
 * `@tether/fuzzy-match`, the refusals in the run's language (thrown as
 * `ToolError`s naming `display`, the file as the model knows it), and the
 * two cases that count as already applied. `patch` and the skill tools share
 * it.
 * @throws ToolError `ERR_TOOL_PATCH_*` when the patch is refused
 */
export function patchText(
  content: string,
  args: TextPatchArgs,
  display: string,
  locale: Locale,
  diffMaxLines: number,
): PatchedText {
  const file = JSON.stringify(display);
  const result = fuzzyReplace(content, args.old_string, args.new_string, {
    replaceAll: args.replace_all ?? false,
  });
  if (!result.ok) {
    if (result.code === 'NO_MATCH' && alreadyApplied(content, args.new_string)) {
      return {
        changed: false,
        report: `Already applied: ${file} has new_string and no longer has old_string, so nothing was written. Read the file if you need to check it.`,
      };
    }
    // The matcher's message names the lines (where a search comes closest, where matches start).
    throw new ToolError(
      FUZZY_CODES[result.code],
      `${refusal(result.code, file, result.count, locale)}\n${result.message}`,
    );
  }
  const first = result.matches[0];
  if (
    result.count === 1 &&
    first !== undefined &&
    insertionAlreadyApplied(content, args.old_string, args.new_string, first)
  ) {
    return {
      changed: false,
      report: `Already applied: ${file} already has new_string around old_string, so nothing was written. If you really mean to insert it again, include more surrounding lines in old_string.`,
    };
  }
  const replacements = `${result.count} replacement${result.count === 1 ? '' : 's'}`;
  const lines = [`Patched ${file}: ${replacements} (strategy: ${result.strategy}).`];
  if (result.strategy !== 'exact') {
    const similarity = first?.similarity === undefined ? '' : `, similarity ${first.similarity.toFixed(2)}`;
    lines.push(
      `old_string matched approximately (${result.strategy}${similarity}); check that the diff changed what you meant.`,
    );
  }
  lines.push(shortDiff(display, content, result.content, diffMaxLines));
  return { changed: true, content: result.content, report: lines.join('\n') };
}

// ignoreBOM keeps a BOM in the text (by default the decoder drops it), so it can be put back.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Makes `patch` for a run. */
export function createPatchTool(environment: ToolEnvironment): Tool {
  const { workspace, limits, locale } = environment;
  return defineTool(patchSchema, async (args, call) => {
    const signal = callSignal(environment, call.signal);
    throwIfCancelled(signal, 'patch');
    const target = await workspace.resolve(args.path);
    const file = JSON.stringify(target.display);
    const handle = await workspace.openFile(target);
    let bytes: Buffer;
    try {
      const { size } = await handle.stat();
      if (size > limits.patchMaxFileBytes) {
        throw new ToolError(
          'ERR_TOOL_FILE_TOO_LARGE',
          `${file} is ${size} bytes; patch edits files up to ${limits.patchMaxFileBytes} bytes. Edit it with a bash command (sed, a script) instead.`,
        );
      }
      bytes = await handle.readFile();
    } finally {
      await handle.close();
    }
    if (bytes.includes(0)) {
      throw new ToolError(
        'ERR_TOOL_FILE_BINARY',
        `${file} is a binary file (it contains NUL bytes); patch only edits text. Use bash for binary files.`,
      );
    }
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      throw new ToolError(
        'ERR_TOOL_FILE_ENCODING',
        `${file} is not valid UTF-8, and patch would corrupt its other bytes. Edit it with a bash command (for example iconv or sed) instead.`,
      );
    }
    const bom = text.startsWith(BOM);
    const content = bom ? text.slice(BOM.length) : text;

    const patched = patchText(content, args, target.display, locale, limits.patchDiffMaxLines);
    if (!patched.changed) return { ok: true, content: patched.report };

    throwIfCancelled(signal, 'patch');
    await workspace.writeFileAtomic(
      target,
      Buffer.from(bom ? BOM + patched.content : patched.content, 'utf8'),
    );
    return { ok: true, content: patched.report };
  });
}
