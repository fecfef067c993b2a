/**
 * The clarify prompt on plain streams (readline in terminal mode reads the
 * escape sequences a terminal would send): choosing from the list, typing a
 * free answer, the countdown, the deadline, and closing it from outside; what
 * stays on the screen (`screen`: the output with its redraws applied).
 */
import pc from 'picocolors';
import { describe, expect, it } from 'vitest';
import { KeyboardInput, RecordingOutput } from '../testing/terminal.js';
import { askClarify } from './clarify-prompt.js';

const { up, down, enter, escape: esc } = KeyboardInput.keys;
const colors = pc.createColors(false);

function setup(choices: string[], expiresInMs = 90_000) {
  const input = new KeyboardInput();
  const output = new RecordingOutput(true);
  const answer = askClarify({
    question: 'Which database?',
    choices,
    expiresAt: Date.now() + expiresInMs,
    colors,
    input,
    output,
  });
  return { input, output, answer };
}

describe('askClarify', () => {
  it('shows the question, the choices plus a free-text entry, and the countdown', async () => {
    const { input, output, answer } = setup(['Postgres', 'SQLite']);
    await output.waitFor('Type my own answer');
    expect(output.plain).toContain('? Which database? 1:30 left');
    expect(output.plain).toMatch(/> 1\. Postgres\n\s+2\. SQLite\n\s+3\. Type my own answer/);
    input.type(enter);
    await expect(answer).resolves.toEqual({ kind: 'answer', answer: 'Postgres' });
    // The choices and the countdown are gone: the question and its answer stay.
    expect(output.screen).toBe('? Which database? Postgres');
  });

  it('moves with the arrow keys, wrapping around', async () => {
    const { input, output, answer } = setup(['Postgres', 'SQLite']);
    await output.waitFor('Type my own answer');
    input.type(up); // wraps to the free-text entry
    input.type(up);
    await output.waitFor('> 2. SQLite');
    input.type(enter);
    await expect(answer).resolves.toEqual({ kind: 'answer', answer: 'SQLite' });
  });

  it('picks by number', async () => {
    const { input, output, answer } = setup(['a', 'b', 'c']);
    await output.waitFor('Type my own answer');
    input.type('3');
    await output.waitFor('> 3. c');
    input.type(enter);
    await expect(answer).resolves.toEqual({ kind: 'answer', answer: 'c' });
  });

  it('takes a typed answer from the free-text entry', async () => {
    const { input, output, answer } = setup(['Postgres']);
    await output.waitFor('Type my own answer');
    input.type(down);
    input.type(enter);
    await output.waitFor('enter to send, esc for the choices');
    input.type(enter); // empty: refused with a hint
    await output.waitFor('Type an answer, then press enter.');
    input.type('MySQL 8');
    await output.waitFor('> MySQL 8');
    input.type(enter);
    await expect(answer).resolves.toEqual({ kind: 'answer', answer: 'MySQL 8' });
  });

  it('starts a typed answer when a letter is typed at the list, and esc goes back', async () => {
    const { input, output, answer } = setup(['Postgres', 'SQLite']);
    await output.waitFor('Type my own answer');
    input.type('x');
    await output.waitFor('enter to send');
    const before = output.mark();
    input.type(esc);
    await output.waitFor('arrows or a number', before);
    input.type(down);
    await output.waitFor('> 2. SQLite');
    input.type(enter);
    await expect(answer).resolves.toEqual({ kind: 'answer', answer: 'SQLite' });
  });

  it('asks for text directly when there are no choices', async () => {
    const { input, output, answer } = setup([]);
    await output.waitFor('enter to send');
    expect(output.plain).not.toContain('Type my own answer');
    input.type('blue\r');
    await expect(answer).resolves.toEqual({ kind: 'answer', answer: 'blue' });
  });

  it('ends by itself at the deadline', async () => {
    const { output, answer } = setup(['a'], 300);
    await expect(answer).resolves.toEqual({ kind: 'expired' });
    expect(output.screen).toBe('? Which database? (no answer in time)');
  });

  it('when its signal aborts, resolves closed and leaves the question alone on the screen', async () => {
    const controller = new AbortController();
    const output = new RecordingOutput(true);
    const answer = askClarify({
      question: 'Q?',
      choices: ['a'],
      expiresAt: Date.now() + 60_000,
      colors,
      input: new KeyboardInput(),
      output,
      signal: controller.signal,
    });
    await output.waitFor('Type my own answer');
    expect(output.screen).toContain('1:00 left');
    controller.abort();
    await expect(answer).resolves.toEqual({ kind: 'closed' });
    // No frozen choices or countdown: the last frame is the question.
    expect(output.screen).toBe('? Q?');
    // The prompt did not end the caller's output.
    expect(output.writableEnded).toBe(false);
  });

  it('resolves closed at once, showing nothing, when its signal has aborted already', async () => {
    const output = new RecordingOutput(true);
    const answer = askClarify({
      question: 'Q?',
      choices: ['a'],
      expiresAt: Date.now() + 60_000,
      colors,
      input: new KeyboardInput(),
      output,
      signal: AbortSignal.abort(),
    });
    await expect(answer).resolves.toEqual({ kind: 'closed' });
    expect(output.plain).toBe('');
  });
});
