/**
 * A `patch` call's change as the lines of a unified diff. The patch tool's
 * result carries one (`--- a/<file>`, `+++ b/<file>`, hunks; see
 * packages/tools' patch.ts): when it does, those lines are shown as they are.
 * When it does not (the call is still running, was refused, or was already
 * applied), the diff is made from the call's arguments: `old_string` as
 * removed lines, `new_string` as added ones, without line numbers, which only
 * the file knows.
 */

export type DiffLineKind = 'file' | 'hunk' | 'add' | 'remove' | 'context' | 'note';

export interface DiffLine {
  kind: DiffLineKind;
  /** The line without its leading `+`, `-` or space (file and hunk headers whole). */
  text: string;
}

export interface PatchDiff {
  /** Where the lines come from: the tool's result, or the call's arguments. */
  from: 'result' | 'arguments';
  path: string | undefined;
  lines: DiffLine[];
}

/** A line after the two file headers (so that a removed `-- x` is not taken for a header). */
function classify(line: string): DiffLine {
  if (line.startsWith('@@')) return { kind: 'hunk', text: line };
  if (line.startsWith('+')) return { kind: 'add', text: line.slice(1) };
  if (line.startsWith('-')) return { kind: 'remove', text: line.slice(1) };
  if (line.startsWith(' ')) return { kind: 'context', text: line.slice(1) };
  // `\ No newline at end of file`, `[... n more diff lines not shown]`, an empty context line.
  return line === '' ? { kind: 'context', text: '' } : { kind: 'note', text: line };
}

function argumentsOf(args: string): { path?: string; old_string?: string; new_string?: string } {
  try {
    const parsed: unknown = JSON.parse(args);
    return typeof parsed === 'object' && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
}

const splitLines = (text: string): string[] => text.replace(/\r?\n$/, '').split(/\r?\n/);

/** The diff of a `patch` call from its arguments (JSON) and its result, if any; undefined without `old_string`/`new_string`. */
export function patchDiff(args: string, result?: { ok: boolean; content: string }): PatchDiff | undefined {
  const parsed = argumentsOf(args);
  const path = typeof parsed.path === 'string' ? parsed.path : undefined;
  if (result?.ok) {
    const lines = result.content.split('\n');
    const start = lines.findIndex(
      (line, index) => line.startsWith('--- ') && lines[index + 1]?.startsWith('+++ ') === true,
    );
    if (start >= 0) {
      const [from, to, ...rest] = lines.slice(start) as [string, string, ...string[]];
      return {
        from: 'result',
        path,
        lines: [{ kind: 'file', text: from }, { kind: 'file', text: to }, ...rest.map(classify)],
      };
    }
  }
  if (typeof parsed.old_string !== 'string' || typeof parsed.new_string !== 'string') return undefined;
  const file = path ?? 'the file';
  return {
    from: 'arguments',
    path,
    lines: [
      { kind: 'file', text: `--- a/${file}` },
      { kind: 'file', text: `+++ b/${file}` },
      ...(parsed.old_string === '' ? [] : splitLines(parsed.old_string)).map(
        (text): DiffLine => ({ kind: 'remove', text }),
      ),
      ...(parsed.new_string === '' ? [] : splitLines(parsed.new_string)).map(
        (text): DiffLine => ({ kind: 'add', text }),
      ),
    ],
  };
}
