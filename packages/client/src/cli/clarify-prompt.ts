/**
 * The terminal prompt for a clarify question, built on Inquirer's prompt core:
 * the choices as a list to move through with the arrow keys (or pick by
 * number), a last entry to type one's own answer (typing any letter jumps
 * there too), and a countdown to the deadline that ticks every second. At the
 * deadline the prompt ends by itself with `{ kind: 'expired' }`. Closed from
 * outside (the question was answered elsewhere, or the run ended), it ends
 * with `{ kind: 'closed' }`. Each way, the last frame is one line: the
 * question, with the answer or what ended it.
 *
 * It reads keys from any readable and writes to any writable (readline in
 * terminal mode), so it runs the same on a real terminal, under a
 * pseudo-terminal, or on plain streams in a test.
 */
import type { Readable } from 'node:stream';
import {
  createPrompt,
  isBackspaceKey,
  isDownKey,
  isEnterKey,
  isNumberKey,
  isUpKey,
  type KeypressEvent,
  useEffect,
  useKeypress,
  useState,
} from '@inquirer/core';
import { formatCountdown } from './duration.js';
import type { Colors, Output } from './io.js';
import { unclosable } from './io.js';

export type ClarifyAnswer = { kind: 'answer'; answer: string } | { kind: 'expired' } | { kind: 'closed' };

export interface ClarifyPromptConfig {
  question: string;
  choices: readonly string[];
  /** The deadline, in ms since the epoch. */
  expiresAt: number;
  colors: Colors;
  now?: () => number;
  /** Closes the prompt: its last frame is the question alone, and it resolves with `closed`. */
  close?: AbortSignal | undefined;
}

const FREE_TEXT_LABEL = 'Type my own answer';
const HIDE_CURSOR = '\u001b[?25l';

const prompt = createPrompt<ClarifyAnswer, ClarifyPromptConfig>((config, done) => {
  const c = config.colors;
  const now = config.now ?? Date.now;
  const hasChoices = config.choices.length > 0;
  const [status, setStatus] = useState<'idle' | 'done' | 'closed'>('idle');
  const [mode, setMode] = useState<'select' | 'text'>(hasChoices ? 'select' : 'text');
  const [active, setActive] = useState(0);
  const [value, setValue] = useState('');
  const [hint, setHint] = useState<string | undefined>(undefined);
  const [answer, setAnswer] = useState<string | undefined>(undefined);
  const [, setTick] = useState(0);

  useEffect(() => {
    const tick = setInterval(() => setTick(now()), 1_000);
    const deadline = setTimeout(
      () => {
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

  const finish = (text: string) => {
    setAnswer(text);
    setStatus('done');
    done({ kind: 'answer', answer: text });
  };

  useKeypress((key: KeypressEvent & { sequence?: string }, rl) => {
    if (status !== 'idle') return;
    if (mode === 'select') {
      const last = config.choices.length; // the free-text entry
      if (isEnterKey(key)) {
        const choice = config.choices[active];
        if (choice === undefined) {
          setMode('text');
          setValue('');
        } else finish(choice);
        rl.clearLine(0);
      } else if (isUpKey(key) || isDownKey(key)) {
        rl.clearLine(0);
        const step = isUpKey(key) ? -1 : 1;
        setActive((active + step + last + 1) % (last + 1));
      } else if (isNumberKey(key) && Number(key.name) >= 1 && Number(key.name) <= last + 1) {
        rl.clearLine(0);
        setActive(Number(key.name) - 1);
      } else if (isPrintable(key)) {
        // Typing starts a free-text answer with what was typed.
        setMode('text');
        setValue(rl.line);
      } else {
        rl.clearLine(0);
      }
      return;
    }
    if (isEnterKey(key)) {
      const text = value.trim();
      if (text === '') {
        setHint('Type an answer, then press enter.');
        return;
      }
      finish(text);
    } else if (key.name === 'escape' && hasChoices) {
      rl.clearLine(0);
      setValue('');
      setHint(undefined);
      setMode('select');
    } else if (isBackspaceKey(key) && rl.line === '' && value === '' && hasChoices) {
      setMode('select');
    } else {
      setValue(rl.line);
      setHint(undefined);
    }
  });

  const title = `${c.magenta('?')} ${c.bold(config.question)}`;
  // What closed it (an answer given elsewhere, the run's end) is shown next, from the run's events.
  if (status === 'closed') return title;
  if (status === 'done') {
    return answer === undefined
      ? `${title} ${c.yellow('(no answer in time)')}`
      : `${title} ${c.cyan(answer)}`;
  }
  const remaining = config.expiresAt - now();
  const countdown = (remaining < 30_000 ? c.red : c.yellow)(`${formatCountdown(remaining)} left`);
  if (mode === 'text') {
    const help = hasChoices ? 'enter to send, esc for the choices' : 'enter to send';
    return [`${title} ${countdown}\n${c.cyan('>')} ${value}`, c.dim(hint ?? help)];
  }
  const entries = [...config.choices, FREE_TEXT_LABEL].map((label, i) => {
    const text = i === config.choices.length ? c.italic(label) : label;
    return i === active ? c.cyan(`> ${i + 1}. ${text}`) : `  ${c.dim(`${i + 1}.`)} ${text}`;
  });
  const help = c.dim('arrows or a number to choose, enter to confirm, or start typing');
  return `${title} ${countdown}\n${entries.join('\n')}\n${help}${HIDE_CURSOR}`;
});

function isPrintable(key: KeypressEvent & { sequence?: string }): boolean {
  return !key.ctrl && typeof key.sequence === 'string' && key.sequence.length === 1 && key.sequence >= ' ';
}

export interface AskClarifyOptions extends Omit<ClarifyPromptConfig, 'close'> {
  input: Readable;
  output: Output;
  /**
   * Ends the prompt early (the question was answered elsewhere, or the run
   * ended): it is replaced by the question alone, not left on the screen.
   */
  signal?: AbortSignal;
}

/**
 * Asks a clarify question at the terminal. Resolves with the answer,
 * `expired` at the deadline, or `closed` when `signal` aborts (at once, with
 * nothing shown, when it has aborted already); rejects with Inquirer's
 * `ExitPromptError` on Ctrl-C.
 */
export async function askClarify(options: AskClarifyOptions): Promise<ClarifyAnswer> {
  const { input, output, signal, ...config } = options;
  if (signal?.aborted) return { kind: 'closed' };
  // Not Inquirer's own `signal`: that rejects and leaves the last frame, countdown and all, on the screen.
  return prompt({ ...config, close: signal }, { input, output: unclosable(output) });
}
