/**
 * Following a run for a person or a script: its stream, shown by an
 * `EventPresenter` (JSON lines with `json`; otherwise the `RunView`, asking
 * each question and each approval request at the terminal when `prompt` is
 * on, and saying how to answer or decide from elsewhere when it is not).
 */
import type { Readable } from 'node:stream';
import type { RunEvent } from '@tether/protocol';
import { TERMINAL_EVENT_TYPES } from '@tether/protocol';
import type { TetherClient } from '../client.js';
import { decideCommand } from './approval-format.js';
import { askApproval } from './approval-prompt.js';
import { askClarify } from './clarify-prompt.js';
import type { Colors, Output } from './io.js';
import { EventPresenter } from './presenter.js';
import { RunView } from './run-view.js';

const TERMINAL_TYPES: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);

export interface FollowOptions {
  client: TetherClient;
  runId: string;
  stdout: Output;
  stdin: Readable;
  colors: Colors;
  json: boolean;
  /** Ask clarify questions and approval requests at the terminal (ignored with `json`). */
  prompt: boolean;
  signal?: AbortSignal | undefined;
  /** Resume after this event id. */
  lastEventId?: string | undefined;
  /** Render into this view (one that showed the events before `lastEventId`) instead of a new one. */
  view?: RunView | undefined;
  now?: () => number;
}

export interface FollowResult {
  /** The terminal event, if the stream reached it. */
  terminal: RunEvent | undefined;
  view: RunView | undefined;
}

/** Follows the run's stream to its terminal event. Errors of the stream and of the prompt (Ctrl-C) propagate. */
export async function followRun(options: FollowOptions): Promise<FollowResult> {
  const { client, runId, stdout, colors: c, json } = options;
  const interactive = options.prompt && !json;
  const view = json
    ? undefined
    : (options.view ??
      new RunView(stdout, c, {
        ...(interactive
          ? {}
          : {
              answerHint: (req: string) => `answer with: tether answer ${runId} ${req} "your answer"`,
              decideHint: (run: string, req: string) => `decide with: ${decideCommand(run, req)}`,
            }),
        ...(options.now ? { now: options.now } : {}),
      }));

  let terminal: RunEvent | undefined;
  // The stream stops on the caller's signal, or when a prompt fails (Ctrl-C at the prompt).
  const stopStream = new AbortController();
  const onAbort = () => stopStream.abort(options.signal?.reason);
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });

  const presenter = new EventPresenter({
    client,
    stdout,
    colors: c,
    view,
    ask: interactive
      ? (event, signal) =>
          askClarify({
            question: event.data.question,
            choices: event.data.choices,
            expiresAt: Date.parse(event.data.expiresAt),
            colors: c,
            input: options.stdin,
            output: stdout,
            signal,
            ...(options.now ? { now: options.now } : {}),
          })
      : undefined,
    askApproval: interactive
      ? (event, decide, signal) =>
          askApproval({
            approval: event.data,
            decide,
            colors: c,
            input: options.stdin,
            output: stdout,
            signal,
            now: options.now,
          })
      : undefined,
    signal: options.signal,
    onAskError: (error) => stopStream.abort(error),
    now: options.now,
  });

  const stream = client.stream(runId, {
    signal: stopStream.signal,
    ...(options.lastEventId ? { lastEventId: options.lastEventId } : {}),
  });
  try {
    for await (const event of stream) {
      if (TERMINAL_TYPES.has(event.type)) terminal = event;
      presenter.handle(event);
    }
    await presenter.settled();
    if (stopStream.signal.aborted) throw stopStream.signal.reason;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    presenter.close();
  }
  return { terminal, view };
}
