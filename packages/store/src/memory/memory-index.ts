import type { MemoryRecord } from '@tether/protocol';
import MiniSearch from 'minisearch';

/**
 * One memory scope held in a process: its entries, a MiniSearch full-text
 * index of them (built at the first search), and their recency order, at a
 * version of the scope (see memory-store.ts). Changes are applied entry by
 * entry, so keeping it current costs what changed, never a rebuild.
 *
 * Ranking: BM25 over the content and the tags (tags weigh double), with prefix
 * matches for terms of 3 characters or more and typos within a fifth of a
 * term's length for terms of 4 or more; then recency (the last save) when two
 * entries score the same. Chinese, Japanese and Korean runs, which have no
 * spaces, are indexed as single characters and pairs of characters.
 */

/** CJK characters (kana, ideographs, hangul): text without spaces between words. */
const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+/g;
const defaultTokenize = MiniSearch.getDefault('tokenize') as (text: string) => string[];

/** The default tokens, with each CJK run split into its characters and its pairs of characters. */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  for (const token of defaultTokenize(text)) {
    const runs = token.match(CJK);
    if (!runs) {
      tokens.push(token);
      continue;
    }
    for (const rest of token.split(CJK)) if (rest) tokens.push(rest);
    for (const run of runs) {
      const chars = [...run];
      for (let i = 0; i < chars.length; i++) {
        tokens.push(chars[i] as string);
        if (i + 1 < chars.length) tokens.push(`${chars[i]}${chars[i + 1]}`);
      }
    }
  }
  return tokens;
}

interface IndexedEntry {
  id: string;
  content: string;
  tags: string;
}

/** A scope's entries and their index, at `version`. */
export class MemoryIndex {
  version: number;
  readonly #records = new Map<string, MemoryRecord>();
  /**
   * The full-text index, built at the first search (a run's start needs only
   * the most recent entries), then kept current entry by entry.
   */
  #search: MiniSearch<IndexedEntry> | undefined;
  /** The records, newest save first; rebuilt after a change, when next asked for. */
  #recent: MemoryRecord[] | undefined;

  constructor(version = -1) {
    this.version = version;
  }

  get size(): number {
    return this.#records.size;
  }

  /** Puts an entry in (or over the one with its id). */
  upsert(record: MemoryRecord): void {
    const old = this.#records.get(record.id);
    if (old && old.updatedAt === record.updatedAt && old.content === record.content) return;
    if (this.#search) {
      if (old) this.#search.replace(indexed(record));
      else this.#search.add(indexed(record));
    }
    this.#records.set(record.id, record);
    this.#recent = undefined;
  }

  /** Takes an entry out; nothing when it is not there. */
  remove(id: string): void {
    if (!this.#records.delete(id)) return;
    this.#search?.discard(id);
    this.#recent = undefined;
  }

  /** Replaces every entry (the index is built again at the next search). */
  reset(records: Iterable<MemoryRecord>): void {
    this.#records.clear();
    for (const record of records) this.#records.set(record.id, record);
    this.#search = undefined;
    this.#recent = undefined;
  }

  /** Every entry, newest save first (ties: the later id first). */
  recent(): readonly MemoryRecord[] {
    this.#recent ??= [...this.#records.values()].sort(
      (a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0),
    );
    return this.#recent;
  }

  /** The entries that match `query`, best first, then the newest first among equal scores. */
  search(query: string): MemoryRecord[] {
    this.#search ??= buildIndex(this.#records.values());
    const scored: { record: MemoryRecord; score: number }[] = [];
    for (const result of this.#search.search(query)) {
      const record = this.#records.get(result.id as string);
      if (record) scored.push({ record, score: result.score });
    }
    scored.sort((a, b) => b.score - a.score || b.record.updatedAt - a.record.updatedAt);
    return scored.map((entry) => entry.record);
  }
}

function indexed(record: MemoryRecord): IndexedEntry {
  return { id: record.id, content: record.content, tags: record.tags.join(' ') };
}

function buildIndex(records: Iterable<MemoryRecord>): MiniSearch<IndexedEntry> {
  const search = new MiniSearch<IndexedEntry>({
    fields: ['content', 'tags'],
    tokenize,
    searchOptions: {
      boost: { tags: 2 },
      prefix: (term) => term.length >= 3,
      fuzzy: (term) => (term.length >= 4 ? 0.2 : false),
      combineWith: 'OR',
    },
  });
  search.addAll([...records].map(indexed));
  return search;
}
