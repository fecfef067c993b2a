/**
 * A tool call that waits for a decision, shown to the person who decides: a
 * `bash` call's command, a `write_file` call's path and content, any other
 * call's arguments as indented JSON. Each is cut to a screenful (and each line
 * to a terminal's width or so), so that a large file never pushes the prompt
 * off the screen; what was cut is said.
 */
import type { PendingApproval } from '@tether/protocol';
import { isRecord } from '../errors.js';
import { formatBytes } from './collect-files.js';
import { formatCountdown } from './duration.js';
import { truncate } from './format.js';

/** Lines of arguments shown at most, and characters of each. */
const MAX_LINES = 20;
const MAX_LINE_LENGTH = 160;

/** The call's arguments as lines to show (not indented, not coloured). */
export function approvalArgumentLines(tool: string, args: unknown): string[] {
  if (isRecord(args)) {
    if (tool === 'bash' && typeof args.command === 'string') {
      const { command, ...rest } = args;
      return [
        ...capped(command.split('\n').map((line, i) => `${i === 0 ? '$' : ' '} ${line}`)),
        ...fields(rest),
      ];
    }
    if (tool === 'write_file' && typeof args.path === 'string' && typeof args.content === 'string') {
      const { path, content, ...rest } = args;
      if (content === '') return [`path: ${path}`, 'content: (empty)', ...fields(rest)];
      const lines = content.replace(/\n$/, '').split('\n');
      const size = `${lines.length} ${lines.length === 1 ? 'line' : 'lines'}, ${formatBytes(Buffer.byteLength(content))}`;
      return [
        `path: ${path}`,
        `content (${size}):`,
        ...capped(lines.map((line) => `| ${line}`)),
        ...fields(rest),
      ];
    }
  }
  // Arguments that were not JSON reach us as the model's text.
  const text = typeof args === 'string' ? args : (JSON.stringify(args, null, 2) ?? String(args));
  return capped(text.split('\n'));
}

/** `9:58 left to decide (until 09:00:00 UTC); then it is rejected`. */
export function deadlineLine(
  approval: Pick<PendingApproval, 'expiresAt' | 'onTimeout'>,
  now: number,
): string {
  const left = formatCountdown(Date.parse(approval.expiresAt) - now);
  const until = approval.expiresAt.slice(11, 19);
  return `${left} left to decide (until ${until} UTC); then ${afterDeadline(approval.onTimeout)}`;
}

/** What the deadline does: `it is rejected`, `it runs`. */
export function afterDeadline(onTimeout: PendingApproval['onTimeout']): string {
  return onTimeout === 'approve' ? 'it runs' : 'it is rejected';
}

/** The command that decides, with its two other forms. */
export function decideCommand(runId: string, requestId: string): string {
  return `tether approve ${runId} ${requestId} [--edit '<json>' | --reject "why"]`;
}

/** `key: value` lines for the arguments shown besides the main ones (a bash call's `timeout`). */
function fields(rest: Record<string, unknown>): string[] {
  return Object.entries(rest).map(([key, value]) =>
    truncate(`${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`, MAX_LINE_LENGTH),
  );
}

function capped(lines: string[]): string[] {
  const shown = lines.slice(0, MAX_LINES).map((line) => truncate(line, MAX_LINE_LENGTH));
  const more = lines.length - shown.length;
  return more > 0 ? [...shown, `… (+${more} ${more === 1 ? 'line' : 'lines'})`] : shown;
}
