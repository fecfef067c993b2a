/**
 * `tether chat`: a conversation in a session. It reads a line, sends it as a
 * message (a run of the session), shows the run's events from the session's
 * one stream (the assistant's text as it streams, tool activity in a line or
 * two), asks the run's questions as they come, and reads the next line once
 * the run has ended.
 *
 * At a terminal: a prompt with line editing, questions asked with the clarify
 * prompt and held tool calls decided with the approval prompt; Ctrl-C cancels
 * the live run (a second press quits), Ctrl-D or `/exit` quits, `/new` starts
 * a new session. From a pipe: one message a line, each run awaited; a
 * question takes the next line as its answer (a number picks that choice); a
 * held tool call is shown with the `tether approve` command that decides it,
 * and the chat waits on.
 */
import { ExitPromptError } from '@inquirer/core';
import type { CreateSessionBody, CreateSessionRunBody, RunEvent, Session } from '@tether/protocol';
import { TERMINAL_EVENT_TYPES } from '@tether/protocol';
import { Option } from 'commander';
import { TetherConflictError, TetherNotFoundError } from '../errors.js';
import { decideCommand } from './approval-format.js';
import { askApproval } from './approval-prompt.js';
import { askClarify } from './clarify-prompt.js';
import { collectFiles } from './collect-files.js';
import type { CommandContext, RegisterCommand } from './command-context.js';
import { repeatable } from './command-context.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';
import { type LineInput, pipedLines, terminalLines } from './line-input.js';
import { ensureModel, type ModelCommand } from './model-check.js';
import { type Ask, type AskApproval, EventPresenter } from './presenter.js';
import { type RunCommandOptions, runSettings } from './run-command.js';
import { RunView } from './run-view.js';

export interface ChatCommandOptions extends RunCommandOptions {
  /** Continue this session instead of creating one. */
  session?: string;
}

const TERMINAL_TYPES: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);

/** `tether chat` for the model check: it offers --model and --replay. */
const CHAT: ModelCommand = { command: 'tether chat', flags: { model: true, replay: true } };

/** Why the chat stops before its input ends: the exit code it ends with. */
class ChatEnd {
  constructor(readonly code: ExitCode) {}
}

/** The input ended while a question waited for its answer on the next line. */
class InputEnded extends Error {}

export async function chatCommand(options: ChatCommandOptions, ctx: CommandContext): Promise<ExitCode> {
  if (options.session !== undefined && options.files !== undefined) {
    throw new UsageError('--files is sent with a new session; it cannot be used with --session');
  }
  const settings = await runSettings(options);
  let files: CreateSessionBody['files'];
  if (options.files !== undefined) {
    const collected = await collectFiles(options.files);
    files = collected.files;
    if (collected.skipped.length > 0) {
      ctx.io.stderr.write(
        ctx.errColors.yellow(
          `Skipped ${collected.skipped.map((s) => `${s.path} (${s.reason})`).join(', ')}\n`,
        ),
      );
    }
  }
  // Every message needs a model: without one, say so before a session is made (or resumed).
  const choice = { profile: options.model, replay: options.replay !== undefined };
  if (!(await ensureModel(ctx, choice, CHAT))) return EXIT.failed;
  return new Chat(options, ctx, settings, files).run();
}

interface Following {
  sessionId: string;
  controller: AbortController;
  done: Promise<void>;
}

class Chat {
  readonly #ctx: CommandContext;
  readonly #options: ChatCommandOptions;
  readonly #settings: Omit<CreateSessionRunBody, 'input'>;
  readonly #files: CreateSessionBody['files'];
  readonly #json: boolean;
  /** At a terminal, with the prompt and the question prompt; otherwise lines from a pipe. */
  readonly #interactive: boolean;
  readonly #stop = new AbortController();
  readonly #input: LineInput;
  readonly #view: RunView | undefined;
  readonly #presenter: EventPresenter;
  #following: Following | undefined;
  /** The run this chat sent and waits for, and whether Ctrl-C asked to cancel it. */
  #active: { runId: string; cancelling: boolean } | undefined;
  readonly #ended = new Map<string, RunEvent>();
  #onEnded: (() => void) | undefined;
  #unfinished = 0;
  /** The session talked in last, for the closing hint. */
  #lastSessionId: string | undefined;

  constructor(
    options: ChatCommandOptions,
    ctx: CommandContext,
    settings: Omit<CreateSessionRunBody, 'input'>,
    files: CreateSessionBody['files'],
  ) {
    this.#ctx = ctx;
    this.#options = options;
    this.#settings = settings;
    this.#files = files;
    this.#json = options.json === true;
    this.#interactive = ctx.interactive && !this.#json;
    const { io, colors } = ctx;
    this.#input = this.#interactive
      ? terminalLines(io.stdin, io.stdout, () => this.interrupt())
      : pipedLines(io.stdin);
    this.#view = this.#json
      ? undefined
      : new RunView(io.stdout, colors, {
          compact: true,
          ...(this.#interactive
            ? {}
            : { decideHint: (run: string, req: string) => `decide with: ${decideCommand(run, req)}` }),
          ...(ctx.now ? { now: ctx.now } : {}),
        });
    this.#presenter = new EventPresenter({
      client: ctx.client,
      stdout: io.stdout,
      colors,
      view: this.#view,
      ask: this.#interactive ? this.#askAtPrompt : this.#askNextLine,
      askApproval: this.#interactive ? this.#decideAtPrompt : undefined,
      signal: this.#stop.signal,
      onAskError: (error) => {
        if (error instanceof ExitPromptError) this.interrupt();
        else if (error instanceof InputEnded) this.#inputEndedWithQuestion();
        else this.#fail(error);
      },
      onShown: (event) => {
        if (TERMINAL_TYPES.has(event.type)) this.#runEnded(event);
      },
      now: ctx.now,
    });
  }

  async run(): Promise<ExitCode> {
    const { io } = this.#ctx;
    const onAbort = () => this.#end(EXIT.interrupted);
    if (io.signal?.aborted) onAbort();
    io.signal?.addEventListener('abort', onAbort, { once: true });
    const untrap = io.onInterrupt?.(() => this.interrupt());
    try {
      if (this.#options.session === undefined) await this.#newSession();
      else await this.#resume(this.#options.session);
      if (this.#interactive) {
        this.#note(
          this.#ctx.colors.dim(
            'Type a message. /new starts a new session; /exit or Ctrl-D leaves; Ctrl-C cancels a live run.',
          ),
        );
      }
      await this.#converse();
      return this.#unfinished > 0 && !this.#interactive ? EXIT.failed : EXIT.ok;
    } catch (error) {
      const reason = this.#stop.signal.aborted ? this.#stop.signal.reason : error;
      if (reason instanceof ChatEnd) return reason.code;
      throw reason;
    } finally {
      io.signal?.removeEventListener('abort', onAbort);
      untrap?.();
      this.#presenter.close();
      this.#input.close();
      await this.#unfollow();
      const id = this.#lastSessionId;
      if (id) this.#note(this.#ctx.colors.dim(`Session ${id}: continue with tether chat --session ${id}`));
    }
  }

  /**
   * Ctrl-C: cancels the live run the first time, quits the next (or at once
   * when no run is live). False when the chat is stopping already.
   */
  interrupt(): boolean {
    if (this.#stop.signal.aborted) return false;
    const active = this.#active;
    if (active && !active.cancelling) {
      active.cancelling = true;
      this.#note(this.#ctx.colors.yellow('Cancelling the run (Ctrl-C again quits).'));
      this.#ctx.client.cancel(active.runId, { signal: this.#stop.signal }).catch((error: unknown) => {
        // Finished already: its terminal event is on its way.
        if (!(error instanceof TetherConflictError) && !this.#stop.signal.aborted) this.#fail(error);
      });
      return true;
    }
    this.#end(EXIT.interrupted);
    return true;
  }

  async #converse(): Promise<void> {
    const { client, colors: c } = this.#ctx;
    const signal = this.#stop.signal;
    for (;;) {
      const line = await this.#input.read(c.bold(c.cyan('you> ')), signal);
      if (line === null) return;
      const text = line.trim();
      if (text === '') continue;
      if (text === '/exit' || text === '/quit') return;
      if (text === '/new') {
        await this.#unfollow();
        await this.#newSession();
        continue;
      }
      if (text === '/help' || text.startsWith('/')) {
        this.#note(c.dim('Commands: /new (a new session), /exit (leave). Anything else is a message.'));
        continue;
      }
      const sessionId = this.#following?.sessionId as string;
      if (!this.#interactive && !this.#json) this.#view?.line(`${c.bold(c.cyan('you>'))} ${text}`);
      const run = await client.sessions.send(
        sessionId,
        { ...this.#settings, input: text },
        { idempotencyKey: globalThis.crypto.randomUUID(), signal },
      );
      this.#ctx.onRun?.(run.id);
      await this.#untilEnded(run.id);
    }
  }

  /** Waits for the run's terminal event to be shown; Ctrl-C meanwhile cancels it. */
  async #untilEnded(runId: string): Promise<void> {
    this.#active = { runId, cancelling: false };
    try {
      while (!this.#ended.has(runId)) {
        this.#stop.signal.throwIfAborted();
        await new Promise<void>((resolve) => {
          const wake = () => {
            this.#onEnded = undefined;
            this.#stop.signal.removeEventListener('abort', wake);
            resolve();
          };
          this.#onEnded = wake;
          this.#stop.signal.addEventListener('abort', wake, { once: true });
        });
      }
      if (this.#ended.get(runId)?.type !== 'run.completed') this.#unfinished++;
      this.#ended.clear();
    } finally {
      this.#active = undefined;
    }
  }

  #runEnded(event: RunEvent): void {
    this.#ended.set(event.runId, event);
    this.#onEnded?.();
  }

  async #newSession(): Promise<void> {
    const { client } = this.#ctx;
    const body: CreateSessionBody = {
      metadata: { client: 'tether chat' },
      ...(this.#files ? { files: this.#files } : {}),
    };
    const session = await client.sessions.create(body, { signal: this.#stop.signal });
    this.#note(`${this.#ctx.colors.bold(`Session ${session.id}`)}`);
    this.#follow(session.id, undefined);
  }

  /** Continues a session: its stream from after its last run, or from the start of a run still live. */
  async #resume(id: string): Promise<void> {
    const { client, colors: c } = this.#ctx;
    const signal = this.#stop.signal;
    let session: Session;
    try {
      session = await client.sessions.get(id, { signal });
    } catch (error) {
      if (error instanceof TetherNotFoundError)
        throw new UsageError(`no session ${id} (tether sessions ls lists yours)`);
      throw error;
    }
    this.#note(`${c.bold(`Session ${session.id}`)} ${c.dim(`${session.runs} runs so far`)}`);
    const last = session.lastRunId;
    if (last === null) {
      this.#follow(session.id, undefined);
      return;
    }
    if (session.status === 'idle') {
      this.#follow(session.id, await this.#endOf(last));
      return;
    }
    // A run is live: show it from its start (and ask its question), and wait for it first.
    this.#follow(session.id, `${session.pendingClarify?.runId ?? last}:0-0`);
    await this.#untilEnded(last);
  }

  /** The session event id of the run's last event. */
  async #endOf(runId: string): Promise<string> {
    let after: string | undefined;
    for (;;) {
      const page = await this.#ctx.client.events(runId, {
        limit: 500,
        signal: this.#stop.signal,
        ...(after ? { after } : {}),
      });
      const last = page.data.at(-1);
      if (last) after = last.id;
      if (page.nextCursor === null || page.data.length === 0) return `${runId}:${after ?? '0-0'}`;
    }
  }

  #follow(sessionId: string, after: string | undefined): void {
    this.#lastSessionId = sessionId;
    const controller = new AbortController();
    const stream = this.#ctx.client.sessions.events(sessionId, {
      signal: controller.signal,
      ...(after ? { after } : {}),
    });
    const done = (async () => {
      try {
        for await (const event of stream) this.#presenter.handle(event);
        if (!controller.signal.aborted) this.#fail(new Error(`the session ${sessionId} was deleted`));
      } catch (error) {
        if (!controller.signal.aborted) this.#fail(error);
      }
    })();
    this.#following = { sessionId, controller, done };
  }

  async #unfollow(): Promise<void> {
    const following = this.#following;
    if (!following) return;
    following.controller.abort();
    await following.done;
    await this.#presenter.settled();
  }

  /** At a terminal: the clarify prompt (choices, own answer, countdown). */
  readonly #askAtPrompt: Ask = (event, signal) =>
    askClarify({
      question: event.data.question,
      choices: event.data.choices,
      expiresAt: Date.parse(event.data.expiresAt),
      colors: this.#ctx.colors,
      input: this.#ctx.io.stdin,
      output: this.#ctx.io.stdout,
      signal,
      ...(this.#ctx.now ? { now: this.#ctx.now } : {}),
    });

  /** At a terminal: the approval prompt (approve, edit, reject, countdown). */
  readonly #decideAtPrompt: AskApproval = (event, decide, signal) =>
    askApproval({
      approval: event.data,
      decide,
      colors: this.#ctx.colors,
      input: this.#ctx.io.stdin,
      output: this.#ctx.io.stdout,
      signal,
      now: this.#ctx.now,
    });

  /** From a pipe: the question shown, the next line its answer (a choice's number picks it). */
  readonly #askNextLine: Ask = async (event, signal) => {
    const { question, choices } = event.data;
    const view = this.#view;
    const c = this.#ctx.colors;
    if (view) {
      view.line(`${c.magenta('?')} ${c.bold(question)}`);
      choices.forEach((choice, i) => {
        view.line(`    ${c.dim(`${i + 1}.`)} ${choice}`);
      });
    }
    const both = AbortSignal.any([signal, this.#stop.signal]);
    for (;;) {
      const line = await this.#input.read('', both);
      if (line === null) throw new InputEnded();
      const text = line.trim();
      if (text === '') continue;
      const pick = /^\d+$/.test(text) ? choices[Number(text) - 1] : undefined;
      // The server's `clarify.answered` shows the answer.
      return { kind: 'answer', answer: pick ?? text };
    }
  };

  #inputEndedWithQuestion(): void {
    const runId = this.#active?.runId;
    this.#ctx.io.stderr.write(
      this.#ctx.errColors.yellow(
        `The input ended while a question waits for its answer${runId ? `: tether show ${runId}` : ''}.\n`,
      ),
    );
    this.#end(EXIT.failed);
  }

  /** A line about the chat itself: stdout, or stderr when stdout carries JSON lines. */
  #note(text: string): void {
    if (this.#view) this.#view.line(text);
    else this.#ctx.io.stderr.write(`${text}\n`);
  }

  #end(code: ExitCode): void {
    if (!this.#stop.signal.aborted) this.#stop.abort(new ChatEnd(code));
  }

  #fail(error: unknown): void {
    if (!this.#stop.signal.aborted) this.#stop.abort(error);
  }
}

/** Adds `tether chat`. */
export const registerChatCommand: RegisterCommand = (program, context, done) => {
  program
    .command('chat')
    .description('talk with the agent in a session: each line a message, its questions asked inline')
    .option('--session <id>', 'continue this session (its id is printed when a chat starts)')
    .option('--model <profile>', 'a model profile configured on the server')
    .option(
      '--replay <file>',
      'play a scripted model from a JSON file for every message (demos and tests; the server must allow it)',
    )
    .option('--files <dir>', "send this directory's text files into the new session's workspace")
    .option('--timeout <duration>', 'how long each question waits for an answer: 30s, 10m, 1h, or ms')
    .addOption(new Option('--locale <locale>', 'language of the runs').choices(['zh', 'en']))
    .option(
      '--require-approval <tool>',
      'ask before each call of this tool runs: approve, edit or reject it (repeatable; a prefix may end in *)',
      repeatable,
    )
    .option('--json', 'print events as JSON lines; lines are read from stdin without a prompt')
    .action(async (options: ChatCommandOptions) => {
      done(await chatCommand(options, context()));
    });
};
