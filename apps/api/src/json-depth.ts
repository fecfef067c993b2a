/**
 * How deep a JSON text nests, found without parsing it and without recursion:
 * one pass over the characters, counting `[` and `{` up and `]` and `}` down
 * outside strings (a string runs from `"` to the next `"` not escaped by a
 * backslash). The text need not be valid JSON: a malformed one is the
 * parser's to refuse, after this check. Run before `JSON.parse`, so a body
 * nested thousands deep never reaches code that recurses over it
 * (`JSON.stringify`, schema validation, hashing) and overflows the stack.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/** Whether `text` nests arrays and objects more than `maxDepth` levels deep (`{}` is one level). */
export function jsonDeeperThan(text: string, maxDepth: number): boolean {
  // Each level takes an opening character at least.
  if (text.length <= maxDepth) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Jump over the string (indexOf, not a character loop: bodies are mostly string content),
      // to the first quote after an even run of backslashes.
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i === -1) return false;
        let backslashes = 0;
        while (text.charCodeAt(i - 1 - backslashes) === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
      }
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return false;
}
