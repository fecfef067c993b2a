/**
 * Following a run for a person or a script. With `json`, each event is one
 * JSON line on stdout and nothing else is written there. Otherwise the
 * `RunView` renders events, and when `prompt` is on, each `clarify.requested`
 * is asked at the terminal while the stream keeps being read: events that
 * arrive meanwhile wait in a buffer (so they do not tear the prompt) and are
 * rendered when it ends. The prompt ends early when the same question is
 * answered elsewhere or times out, or when the run ends.
 */
import type { Readable } from 'node:stream';
import type { RunEvent, RunEventData } from '@tether/protocol';
import { TERMINAL_EVENT_TYPES } from '@tether/protocol';
import type { TetherClient } from '../client.js';
import { TetherConflictError, TetherNotFoundError } from '../errors.js';
import { askClarify } from './clarify-prompt.js';
import type { Colors, Output } from './io.js';
import { RunView } from './run-view.js';

const TERMINAL_TYPES: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);

export interface FollowOptions {
  client: TetherClient;
  runId: string;
  stdout: Output;
  stdin: Readable;
  colors: Colors;
  json: boolean;
  /** Ask clarify questions at the terminal (ignored with `json`). */
  prompt: boolean;
  signal?: AbortSignal | undefined;
  /** Resume after this event id. */
  lastEventId?: string | undefined;
  now?: () => number;
}

export interface FollowResult {
  /** The terminal event, if the stream reached it. */
  terminal: RunEvent | undefined;
  view: RunView | undefined;
}

interface PendingPrompt {
  requestId: string;
  controller: AbortController;
  buffer: RunEvent[];
  settled: Promise<void>;
}

/** Follows the run's stream to its terminal event. Errors of the stream and of the prompt (Ctrl-C) propagate. */
export async function followRun(options: FollowOptions): Promise<FollowResult> {
  const { client, runId, stdout, colors: c, json } = options;
  const interactive = options.prompt && !json;
  const view = json
    ? undefined
    : new RunView(stdout, c, {
        ...(interactive
          ? {}
          : { answerHint: (req: string) => `answer with: tether answer ${runId} ${req} "your answer"` }),
        ...(options.now ? { now: options.now } : {}),
      });

  const now = options.now ?? Date.now;
  let terminal: RunEvent | undefined;
  let pending: PendingPrompt | undefined;
  // The stream stops on the caller's signal, or when a prompt fails (Ctrl-C at the prompt).
  const stopStream = new AbortController();
  const onAbort = () => stopStream.abort(options.signal?.reason);
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });

  const ask = (data: RunEventData<'clarify.requested'>, v: RunView) => {
    const expiresAt = Date.parse(data.expiresAt);
    const controller = new AbortController();
    const state: PendingPrompt = {
      requestId: data.requestId,
      controller,
      buffer: [],
      settled: Promise.resolve(),
    };
    pending = state;
    state.settled = (async () => {
      try {
        const result = await askClarify({
          question: data.question,
          choices: data.choices,
          expiresAt,
          colors: c,
          input: options.stdin,
          output: stdout,
          signal: controller.signal,
          ...(options.now ? { now: options.now } : {}),
        });
        // At the deadline the prompt shows "(no answer in time)"; the server's `clarify.timed_out` follows.
        if (result.kind === 'answer') {
          try {
            // The server's `clarify.answered` event confirms the answer next.
            await client.answer(
              runId,
              data.requestId,
              result.answer,
              options.signal ? { signal: options.signal } : {},
            );
          } catch (error) {
            if (!(error instanceof TetherConflictError || error instanceof TetherNotFoundError)) throw error;
            v.line(c.yellow(`  Too late: ${error.message}`));
          }
        }
      } catch (error) {
        // Aborted because the question was settled elsewhere or the run ended: not an error.
        if (!controller.signal.aborted) stopStream.abort(error);
      } finally {
        pending = undefined;
        for (const event of state.buffer) handle(event);
      }
    })();
  };

  const handle = (event: RunEvent): void => {
    if (pending) {
      pending.buffer.push(event);
      const settles =
        (event.type === 'clarify.answered' || event.type === 'clarify.timed_out') &&
        event.data.requestId === pending.requestId;
      if (settles || TERMINAL_TYPES.has(event.type)) pending.controller.abort();
      return;
    }
    if (!view) {
      stdout.write(`${JSON.stringify(event)}\n`);
      return;
    }
    if (interactive && event.type === 'clarify.requested' && Date.parse(event.data.expiresAt) > now()) {
      // The prompt shows the question; rendering it too would print it twice.
      ask(event.data, view);
      return;
    }
    view.render(event);
  };

  const stream = client.stream(runId, {
    signal: stopStream.signal,
    ...(options.lastEventId ? { lastEventId: options.lastEventId } : {}),
  });
  try {
    for await (const event of stream) {
      if (TERMINAL_TYPES.has(event.type)) terminal = event;
      handle(event);
    }
    while (pending) await pending.settled;
    if (stopStream.signal.aborted) throw stopStream.signal.reason;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    pending?.controller.abort();
  }
  return { terminal, view };
}
