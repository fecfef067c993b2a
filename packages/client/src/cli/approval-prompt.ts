/**
 * The terminal prompt for a tool call that waits for a decision, built on
 * Inquirer's prompt core as the clarify prompt is: one key decides (`a`
 * approve, `e` edit, `r` reject) with a countdown to the deadline beside it.
 * `e` asks for the arguments the call should run with instead, as one line of
 * JSON (the model's arguments are on the line to start from); invalid JSON, or
 * anything but an object, is refused there with the reason. `r` asks for an
 * optional message, which the model is told. Esc goes back to the three keys.
 *
 * `askApproval` posts the decision through its caller: a 400 (edited
 * arguments the tool refuses, the message naming the field) opens the same
 * step again with the text that was refused and the server's message under
 * it. At the deadline the prompt ends by itself (the policy's `onTimeout`
 * decides); closed from outside (decided elsewhere, or the run ended) it ends
 * with the question alone on the screen.
 */
import type { Readable } from 'node:stream';
import {
  createPrompt,
  isEnterKey,
  type KeypressEvent,
  useEffect,
  useKeypress,
  useState,
} from '@inquirer/core';
import type { ApprovalDecisionBody, PendingApproval } from '@tether/protocol';
import { APPROVAL_LIMITS } from '@tether/protocol';
import { isRecord, TetherApiError } from '../errors.js';
import { afterDeadline } from './approval-format.js';
import { formatCountdown } from './duration.js';
import type { Colors, Output } from './io.js';
import { unclosable } from './io.js';

export type ApprovalChoice =
  | { kind: 'decided'; decision: ApprovalDecisionBody }
  | { kind: 'expired' }
  | { kind: 'closed' };

type Step = 'choose' | 'edit' | 'reject';

interface ApprovalPromptConfig {
  tool: string;
  /** The deadline, in ms since the epoch. */
  expiresAt: number;
  onTimeout: PendingApproval['onTimeout'];
  /** Where the prompt starts: the three keys, or a step whose decision the server refused. */
  step: Step;
  /** The text each step starts with. */
  editText: string;
  rejectText: string;
  /** Why the server refused the decision the prompt starts again for, shown under its step. */
  refusal: string | undefined;
  colors: Colors;
  now?: (() => number) | undefined;
  close?: AbortSignal | undefined;
}

type PromptResult =
  | { kind: 'decision'; decision: ApprovalDecisionBody; text: string }
  | { kind: 'expired' }
  | { kind: 'closed' };

/** Arguments longer than this, as one line of JSON, are not put on the edit line to start from. */
const PREFILL_MAX_LENGTH = 2_000;
const HIDE_CURSOR = '\u001b[?25l';
const EDIT_EXAMPLE = '{"path": "notes.txt"}';

const prompt = createPrompt<PromptResult, ApprovalPromptConfig>((config, done) => {
  const c = config.colors;
  const now = config.now ?? Date.now;
  const [status, setStatus] = useState<'idle' | 'done' | 'closed'>('idle');
  const [step, setStep] = useState<Step>(config.step);
  const startText = { choose: '', edit: config.editText, reject: config.rejectText }[config.step];
  const [value, setValue] = useState(startText);
  const [hint, setHint] = useState<string | undefined>(undefined);
  const [outcome, setOutcome] = useState<string | undefined>(undefined);
  const [, setTick] = useState(0);

  useEffect((rl) => {
    // The line readline edits starts with the text too (drawn again, so the cursor ends up after it).
    if (startText !== '') {
      rl.write(startText);
      setValue(startText);
    }
    const tick = setInterval(() => setTick(now()), 1_000);
    const deadline = setTimeout(
      () => {
        setOutcome(c.yellow(`(no decision in time: ${afterDeadline(config.onTimeout)})`));
        setStatus('done');
        done({ kind: 'expired' });
      },
      Math.max(0, config.expiresAt - now()),
    );
    const close = () => {
      setStatus('closed');
      done({ kind: 'closed' });
    };
    config.close?.addEventListener('abort', close, { once: true });
    return () => {
      clearInterval(tick);
      clearTimeout(deadline);
      config.close?.removeEventListener('abort', close);
    };
  }, []);

  const finish = (decision: ApprovalDecisionBody, text: string, shown: string) => {
    setOutcome(shown);
    setStatus('done');
    done({ kind: 'decision', decision, text });
  };

  useKeypress((key: KeypressEvent & { sequence?: string }, rl) => {
    if (status !== 'idle') return;
    if (step === 'choose') {
      rl.clearLine(0);
      const pressed = key.ctrl ? '' : (key.sequence ?? '').toLowerCase();
      if (pressed === 'a') finish({ decision: 'approve' }, '', c.green('approve'));
      else if (pressed === 'e' || pressed === 'r') {
        const text = pressed === 'e' ? config.editText : config.rejectText;
        rl.write(text);
        setValue(text);
        setHint(undefined);
        setStep(pressed === 'e' ? 'edit' : 'reject');
      } else setHint('Press a to approve, e to edit the arguments, r to reject.');
      return;
    }
    if (key.name === 'escape') {
      rl.clearLine(0);
      setValue('');
      setHint(undefined);
      setStep('choose');
      return;
    }
    if (!isEnterKey(key)) {
      setValue(rl.line);
      setHint(undefined);
      return;
    }
    const text = value.trim();
    if (step === 'reject') {
      if (text.length > APPROVAL_LIMITS.messageMaxLength) {
        rl.write(value);
        setHint(`The message is ${text.length} characters: at most ${APPROVAL_LIMITS.messageMaxLength}.`);
        return;
      }
      const decision: ApprovalDecisionBody =
        text === '' ? { decision: 'reject' } : { decision: 'reject', message: text };
      finish(decision, text, c.red(text === '' ? 'reject' : `reject: ${text}`));
      return;
    }
    const parsed = parseArguments(text);
    if (typeof parsed === 'string') {
      // Readline has taken the line on enter: put it back to be corrected.
      rl.write(value);
      setHint(parsed);
      return;
    }
    finish({ decision: 'edit', arguments: parsed }, text, c.cyan('edit'));
  });

  const title = `${c.magenta('?')} ${c.bold(`Run ${config.tool}?`)}`;
  if (status === 'closed') return title;
  if (status === 'done') return `${title} ${outcome ?? ''}`;
  const remaining = config.expiresAt - now();
  const countdown = (remaining < 30_000 ? c.red : c.yellow)(`${formatCountdown(remaining)} left`);
  if (step === 'choose') {
    const keys = `${c.cyan('[a]')}pprove / ${c.cyan('[e]')}dit / ${c.cyan('[r]')}eject`;
    const line = `${title} ${keys} ${countdown}${HIDE_CURSOR}`;
    return hint ? [line, c.dim(hint)] : line;
  }
  const ask =
    step === 'edit'
      ? 'the arguments to run it with, as one line of JSON'
      : 'why reject it? (optional; the model is told)';
  const refusal = step === config.step && config.refusal ? `${c.red(config.refusal)}\n` : '';
  return [
    `${title} ${c.dim(ask)} ${countdown}\n${c.cyan('>')} ${value}`,
    `${refusal}${c.dim(hint ?? 'enter to send, esc to go back')}`,
  ];
});

/** The arguments an edit line holds, or why they cannot be sent. */
function parseArguments(text: string): Record<string, unknown> | string {
  if (text === '') return `Type the arguments as one line of JSON, such as ${EDIT_EXAMPLE}.`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return `Not valid JSON (${error instanceof Error ? error.message : String(error)}).`;
  }
  if (!isRecord(parsed)) return `The arguments must be a JSON object, such as ${EDIT_EXAMPLE}.`;
  return parsed;
}

/** The model's arguments as one line to edit, when they are an object and not too long. */
function editLine(args: unknown): string {
  if (!isRecord(args)) return '';
  const text = JSON.stringify(args);
  return text.length <= PREFILL_MAX_LENGTH ? text : '';
}

export interface AskApprovalOptions {
  approval: PendingApproval;
  /** Posts the decision. Its 400 is shown and the step asked again; anything else it throws is thrown. */
  decide: (decision: ApprovalDecisionBody) => Promise<void>;
  input: Readable;
  output: Output;
  colors: Colors;
  now?: (() => number) | undefined;
  /** Ends the prompt early (decided elsewhere, or the run ended): the question alone stays on the screen. */
  signal?: AbortSignal | undefined;
}

/**
 * Asks for a decision on a held tool call at the terminal and posts it with `decide`. Resolves
 * with the decision once the server took it, `expired` at the deadline, or `closed` when `signal`
 * aborts (at once, with nothing shown, when it has aborted already); rejects with what `decide`
 * throws other than a 400 (a 409 when it was decided elsewhere first), or with Inquirer's
 * `ExitPromptError` on Ctrl-C.
 */
export async function askApproval(options: AskApprovalOptions): Promise<ApprovalChoice> {
  const { approval, decide, input, output, signal } = options;
  let config: Omit<ApprovalPromptConfig, 'colors' | 'now' | 'close'> = {
    tool: approval.tool,
    expiresAt: Date.parse(approval.expiresAt),
    onTimeout: approval.onTimeout,
    step: 'choose',
    editText: editLine(approval.arguments),
    rejectText: '',
    refusal: undefined,
  };
  for (;;) {
    if (signal?.aborted) return { kind: 'closed' };
    // Not Inquirer's own `signal`: that rejects and leaves the last frame, countdown and all, on the screen.
    const result = await prompt(
      { ...config, colors: options.colors, now: options.now, close: signal },
      { input, output: unclosable(output) },
    );
    if (result.kind !== 'decision') return result;
    try {
      await decide(result.decision);
      return { kind: 'decided', decision: result.decision };
    } catch (error) {
      const step = result.decision.decision;
      if (!(error instanceof TetherApiError && error.status === 400) || step === 'approve') throw error;
      config = {
        ...config,
        step,
        ...(step === 'edit' ? { editText: result.text } : { rejectText: result.text }),
        refusal: `The server refused it: ${error.message} (${error.code})`,
      };
    }
  }
}
