import { closestPlaces, listMatchLines, matchLines } from './candidates.js';
import { escapeDrift, escapedQuotesMissing } from './escape-drift.js';
import { leadingWhitespace } from './lines.js';
import { preserveOriginal } from './preserve.js';
import { indentUnit, reindent, usesTabs } from './reindent.js';
import { findMatches, type RawMatch, SearchContext, unescapeSequences } from './strategies.js';
import {
  APPROXIMATE_STRATEGIES,
  type FuzzyCandidate,
  type FuzzyMatchResult,
  type FuzzyOptions,
  type FuzzyReplaceOptions,
  type FuzzyReplaceResult,
  resolveOptions,
  type StrategyName,
} from './types.js';

const LINE_BASED: readonly StrategyName[] = [
  'line_trimmed',
  'indent_flexible',
  'trimmed_boundary',
  'block_anchor',
  'context_aware',
];

/**
 * Every match of `search` in `content` by the first strategy (in the design's
 * order) that finds one: non-overlapping, left to right. Empty or
 * whitespace-only searches match nothing.
 */
export function fuzzyFindAll(content: string, search: string, options?: FuzzyOptions): FuzzyMatchResult[] {
  if (search.trim() === '') return [];
  const ctx = new SearchContext(content, search, resolveOptions(options));
  const found = findMatches(ctx);
  if (!found) return [];
  return found.matches.map((match) => report(content, found.strategy, match));
}

function report(content: string, strategy: StrategyName, match: RawMatch): FuzzyMatchResult {
  const result: FuzzyMatchResult = {
    strategy,
    startIndex: match.start,
    endIndex: match.end,
    matchedText: content.slice(match.start, match.end),
  };
  if (match.similarity !== undefined) result.similarity = match.similarity;
  return result;
}

/**
 * Replaces `oldString` with `newString` in `content`, matching `oldString` with
 * the strategy chain. Refuses, without touching the content, an empty search
 * (`EMPTY_SEARCH`), a no-op (`IDENTICAL`), no match (`NO_MATCH`, with the
 * closest lines), several matches without `replaceAll` (`AMBIGUOUS`),
 * `replaceAll` over several approximate matches (`FUZZY_REPLACE_ALL`), and a
 * non-exact match whose new text holds `\'` or `\"` that the file does not
 * have where it matched (`ESCAPE_DRIFT`: the model escaped its quotes).
 *
 * The new text is adapted to the file: re-indented after a line-based match
 * whose indentation differs, unescaped after `escape_normalized`, written with
 * the file's line breaks (CRLF stays CRLF), and after `unicode_normalized` the
 * file's own typographic characters are kept where the new text keeps the old.
 * Text outside the matched spans is never changed.
 */
export function fuzzyReplace(
  content: string,
  oldString: string,
  newString: string,
  options: FuzzyReplaceOptions = {},
): FuzzyReplaceResult {
  if (oldString.trim() === '') {
    return {
      ok: false,
      code: 'EMPTY_SEARCH',
      count: 0,
      message:
        oldString === ''
          ? 'old_string is empty: give the exact text to replace.'
          : `old_string is only whitespace (${describeWhitespace(oldString)}), which would match almost anywhere: give the text to replace with at least one visible character, for example the whole line before or after the whitespace to change.`,
    };
  }
  if (oldString === newString) {
    return {
      ok: false,
      code: 'IDENTICAL',
      count: 0,
      message: 'old_string and new_string are identical: nothing would change.',
    };
  }
  const ctx = new SearchContext(content, oldString, resolveOptions(options));
  const found = findMatches(ctx);
  if (!found) {
    const candidates = closestPlaces(ctx);
    const limit = ctx.filter.exhausted
      ? ' The approximate comparison stopped at its work limit (a long old_string against a large file): give old_string exactly as the file has it, or a shorter one.'
      : '';
    const escaped = escapedQuotesMissing(oldString, content);
    const unescapeHint = escaped
      ? ` old_string holds ${escaped} (a backslash before a quote), which the file does not have anywhere: if the file has plain quotes there, send old_string and new_string with their quotes unescaped.`
      : '';
    return {
      ok: false,
      code: 'NO_MATCH',
      count: 0,
      candidates,
      message: `old_string was not found in the file, even approximately.${limit}${unescapeHint} Read the file again and copy the text to replace from it.${describePlaces(candidates)}`,
    };
  }
  const { strategy, matches } = found;
  const count = matches.length;
  if (count > 1 && !options.replaceAll) {
    const candidates = matchLines(ctx.index, matches);
    return {
      ok: false,
      code: 'AMBIGUOUS',
      count,
      candidates,
      message: `old_string matches ${count} places (${listMatchLines(candidates)}). Add surrounding lines to old_string so it matches one place, or set replace_all to replace every one.`,
    };
  }
  if (count > 1 && APPROXIMATE_STRATEGIES.includes(strategy)) {
    const candidates = matchLines(ctx.index, matches);
    return {
      ok: false,
      code: 'FUZZY_REPLACE_ALL',
      count,
      candidates,
      message: `old_string only approximately matches ${count} places (${listMatchLines(candidates)}, by ${strategy}); replace_all does not apply approximate matches. Replace them one at a time with exact text.`,
    };
  }
  if (strategy !== 'exact') {
    const drift = escapeDrift(ctx.index, matches, newString);
    if (drift) {
      const line = drift.line + 1;
      return {
        ok: false,
        code: 'ESCAPE_DRIFT',
        count,
        candidates: [{ line, text: ctx.index.line(drift.line) }],
        message: `new_string holds ${drift.sequence} (a backslash before a quote), but the file has none where old_string matched (line ${line}, by ${strategy}, not exactly): the quotes look escaped, as inside a JSON or shell string, and the backslashes would be written into the file. Send old_string and new_string with their quotes unescaped, as the file has them. If the file really needs ${drift.sequence} there, give old_string exactly as the file has it.`,
      };
    }
  }
  const replacement = new Replacement(ctx, strategy, newString);
  const parts: string[] = [];
  let at = 0;
  for (const match of matches) {
    parts.push(content.slice(at, match.start), replacement.for(match));
    at = match.end;
  }
  parts.push(content.slice(at));
  return {
    ok: true,
    content: parts.join(''),
    count,
    strategy,
    matches: matches.map((match) => report(content, strategy, match)),
  };
}

/** Builds each match's new text, once per strategy where the text does not depend on the match. */
class Replacement {
  readonly #ctx: SearchContext;
  readonly #strategy: StrategyName;
  readonly #newString: string;
  #crlf: boolean | undefined;
  #fixed: string | undefined;
  readonly #byIndent = new Map<string, string>();
  #tabs: boolean | undefined;

  constructor(ctx: SearchContext, strategy: StrategyName, newString: string) {
    this.#ctx = ctx;
    this.#strategy = strategy;
    this.#newString = newString;
  }

  for(match: RawMatch): string {
    const ctx = this.#ctx;
    const strategy = this.#strategy;
    if (strategy === 'unicode_normalized') return this.#unicode(match);
    if (LINE_BASED.includes(strategy)) {
      // The new text depends only on the matched line's indentation: build it once per indentation.
      const indent = this.#matchedIndent(match);
      let text = this.#byIndent.get(indent);
      if (text === undefined) {
        text = this.#lineEndings(this.#lineTexts(match, ctx.search, this.#newString)[1]);
        this.#byIndent.set(indent, text);
      }
      return text;
    }
    this.#fixed ??= this.#lineEndings(this.#characterText());
    return this.#fixed;
  }

  #characterText(): string {
    const strategy = this.#strategy;
    if (strategy === 'escape_normalized') return unescapeSequences(this.#newString);
    if (strategy === 'whitespace_normalized') {
      // The search's leading and trailing whitespace was not matched: drop the same from the new text.
      const search = this.#ctx.search;
      let text = this.#newString;
      const lead = search.slice(0, search.length - search.trimStart().length);
      const trail = search.slice(search.trimEnd().length);
      if (lead && text.startsWith(lead)) text = text.slice(lead.length);
      if (trail && text.endsWith(trail) && text.length >= trail.length)
        text = text.slice(0, text.length - trail.length);
      return text;
    }
    return this.#newString;
  }

  /** Old and new text for a whole-line match: final line break handled, re-indented to the matched lines. */
  #lineTexts(match: RawMatch, oldString: string, newString: string): [string, string] {
    const ctx = this.#ctx;
    const pattern = ctx.pattern;
    let oldText = oldString;
    let newText = newString;
    if (pattern.droppedFinalBreak) {
      oldText = dropFinalBreak(oldText);
      if (/\r?\n$/.test(newText)) newText = dropFinalBreak(newText);
    }
    if (pattern.firstNonBlank < 0 || match.firstLine === undefined) return [oldText, newText];
    const from = leadingWhitespace(pattern.lines[pattern.firstNonBlank] as string);
    const to = this.#matchedIndent(match);
    if (from === to) return [oldText, newText];
    const unit = indentUnit(oldText, newText);
    if (to === '') this.#tabs ??= usesTabs(ctx.index.lines);
    const tabs = to === '' && this.#tabs === true;
    return [reindent(oldText, from, to, tabs, unit), reindent(newText, from, to, tabs, unit)];
  }

  /** The indentation of the line that the search's first non-blank line matched. */
  #matchedIndent(match: RawMatch): string {
    const pattern = this.#ctx.pattern;
    if (pattern.firstNonBlank < 0 || match.firstLine === undefined) return '';
    return leadingWhitespace(this.#ctx.index.line(match.firstLine + pattern.firstNonBlank));
  }

  #unicode(match: RawMatch): string {
    const ctx = this.#ctx;
    const matched = ctx.content.slice(match.start, match.end);
    const lines = ctx.unicodeMode === 'lines';
    const [oldText, newText] = lines
      ? this.#lineTexts(match, ctx.search, this.#newString)
      : [ctx.search, this.#newString];
    const parts = preserveOriginal(oldText, newText, matched, lines);
    if (!parts) return this.#lineEndings(newText);
    return parts.head + this.#lineEndings(parts.middle) + parts.tail;
  }

  /** Writes the text's line breaks as the file's. */
  #lineEndings(text: string): string {
    if (!text.includes('\n')) return text;
    this.#crlf ??= this.#ctx.index.crlf;
    return this.#crlf ? text.replace(/\r?\n/g, '\r\n') : text.replace(/\r\n/g, '\n');
  }
}

function dropFinalBreak(text: string): string {
  if (text.endsWith('\r\n')) return text.slice(0, -2);
  if (text.endsWith('\n')) return text.slice(0, -1);
  return text;
}

/** "2 spaces, a tab and a line break": what a whitespace-only search holds. */
function describeWhitespace(text: string): string {
  const kinds: [RegExp, string, string][] = [
    [/ /g, 'a space', 'spaces'],
    [/\t/g, 'a tab', 'tabs'],
    [/\n/g, 'a line break', 'line breaks'],
  ];
  const parts: string[] = [];
  for (const [pattern, one, many] of kinds) {
    const n = text.match(pattern)?.length ?? 0;
    if (n === 1) parts.push(one);
    else if (n > 1) parts.push(`${n} ${many}`);
  }
  if (parts.length === 0) return 'other blank characters';
  return parts.length === 1 ? (parts[0] as string) : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}

/** The NO_MATCH lines on where the search comes closest: each place as the file's line and the search's. */
function describePlaces(candidates: FuzzyCandidate[]): string {
  if (candidates.length === 0) return '';
  const places = candidates.map(
    (c) => `file line ${c.line}: ${c.text}\nold_string line ${c.searchLine ?? 1}: ${c.searchText ?? ''}`,
  );
  return `\nWhere it comes closest, the first line that differs:\n${places.join('\n')}`;
}
