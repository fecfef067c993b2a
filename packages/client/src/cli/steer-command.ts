/**
 * `tether steer ID MESSAGE…`: a message from the user to a live run, which takes it at its next
 * turn boundary without stopping. The message is the words joined with spaces, or, for a lone
 * `-`, everything read from stdin (so that a long or multi-line message needs no quoting).
 */
import type { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { STEER_LIMITS } from '@tether/protocol';
import type { CommandContext } from './command-context.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';
import type { CliIo } from './io.js';

export interface SteerCommandOptions {
  /** Print the API's answer (`{ messageId }`) as JSON instead of a sentence. */
  json?: boolean;
}

/** `tether steer ID MESSAGE…` (or `tether steer ID -`): sends the message and says when the run takes it. */
export async function steerCommand(
  id: string,
  words: readonly string[],
  options: SteerCommandOptions,
  ctx: CommandContext,
): Promise<ExitCode> {
  const content = await steerMessage(words, ctx.io);
  const { messageId } = await ctx.client.steer(id, content, ctx.io.signal ? { signal: ctx.io.signal } : {});
  if (options.json) ctx.io.stdout.write(`${JSON.stringify({ messageId })}\n`);
  else ctx.io.stdout.write(`Sent ${messageId} to ${id}; the run takes it at its next turn boundary.\n`);
  return EXIT.ok;
}

/**
 * The message `tether steer`'s words give: joined with spaces, or stdin's text (without its last
 * line breaks) when the only word is `-`. A dash among other words is a dash. Throws `UsageError`
 * for an empty message or one over the API's limit, counted in characters as the API counts them.
 */
export async function steerMessage(
  words: readonly string[],
  io: Pick<CliIo, 'stdin' | 'stderr' | 'signal'>,
): Promise<string> {
  const fromStdin = words.length === 1 && words[0] === '-';
  let content: string;
  if (fromStdin) {
    if (io.stdin.isTTY) io.stderr.write('Type the message, then Ctrl-D on a line of its own.\n');
    content = (await readAll(io.stdin, io.signal)).replace(/(\r?\n)+$/, '');
  } else {
    content = words.join(' ');
  }
  if (content.trim() === '') {
    throw new UsageError(
      fromStdin
        ? 'stdin held no message: pipe the message in, such as echo "Keep it short" | tether steer ID -'
        : 'the message must not be empty: tether steer ID "what the run should know"',
    );
  }
  const length = [...content].length;
  if (length > STEER_LIMITS.contentMaxLength) {
    throw new UsageError(
      `the message must be at most ${STEER_LIMITS.contentMaxLength} characters (got ${length})`,
    );
  }
  return content;
}

/** Everything `input` holds to its end; rejects with the signal's reason when it aborts first (Ctrl-C). */
function readAll(input: Readable, signal: AbortSignal | undefined): Promise<string> {
  const reading = text(input);
  if (!signal) return reading;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    reading.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
