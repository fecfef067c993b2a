import type { ChildResultStatus, Run, RunStatus, TodoItem } from '@tether/protocol';
import { TERMINAL_STATUSES } from '@tether/protocol';
import type { Colors } from './io.js';

const TERMINAL: ReadonlySet<RunStatus> = new Set(TERMINAL_STATUSES);

/** The few non-ASCII marks the CLI draws, and their plain ASCII stand-ins. */
export interface Glyphs {
  /** Marks a crew child's line in a parent's events. */
  child: string;
  /** Mark a message sent to a live run, the run taking it, and the run ending without it. */
  message: string;
  delivered: string;
  undelivered: string;
  /** A tree's branch to a child with siblings after it, to the last child, and the continuations below each. */
  branch: string;
  lastBranch: string;
  pipe: string;
  space: string;
}

const UNICODE: Glyphs = {
  child: '↳',
  message: '→',
  delivered: '✓',
  undelivered: '✗',
  branch: '├─ ',
  lastBranch: '└─ ',
  pipe: '│  ',
  space: '   ',
};
const ASCII: Glyphs = {
  child: '->',
  message: '->',
  delivered: '+',
  undelivered: 'x',
  branch: '|- ',
  lastBranch: '`- ',
  pipe: '|  ',
  space: '   ',
};

/**
 * Box-drawing marks where colour is on (a terminal without NO_COLOR, see
 * `colorsFor`), plain ASCII otherwise: a log file or a pipe gets bytes any
 * tool can read.
 */
export function glyphsFor(c: Colors): Glyphs {
  return c.isColorSupported ? UNICODE : ASCII;
}

/** How many of a crew parent's children are still live. */
export function liveChildren(run: Pick<Run, 'children'>): number {
  return (run.children ?? []).filter((child) => !TERMINAL.has(child.status)).length;
}

/** `waiting for 3 children`, `waiting for 1 child`. */
export function waitingFor(count: number): string {
  return `waiting for ${count} ${count === 1 ? 'child' : 'children'}`;
}

/** Cuts `text` to `max` characters, ending with `…` when cut. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

/** The first non-empty line, cut to `max`, and how many lines followed. */
export function firstLine(text: string, max = 100): { line: string; more: number } {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  while (lines.length > 0 && lines[lines.length - 1]?.trim() === '') lines.pop();
  const index = lines.findIndex((l) => l.trim() !== '');
  if (index === -1) return { line: '', more: 0 };
  return { line: truncate((lines[index] ?? '').trim(), max), more: lines.length - index - 1 };
}

/** A tool call's arguments in one short line: `path=src/a.ts, limit=20`. */
export function summariseArguments(json: string, max = 80): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return truncate(json.replace(/\s+/g, ' '), max);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return truncate(JSON.stringify(parsed), max);
  }
  const parts = Object.entries(parsed).map(([key, value]) => {
    const shown = typeof value === 'string' ? value.replace(/\s+/g, ' ').trim() : JSON.stringify(value);
    return `${key}=${truncate(shown, 40)}`;
  });
  return truncate(parts.join(', '), max);
}

/** `3m ago`, `in 5s`, from an ISO time. */
export function relativeTime(iso: string, now = Date.now()): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return iso;
  const diff = then - now;
  const abs = Math.abs(diff);
  let text: string;
  if (abs < 1_000) return 'just now';
  if (abs < 60_000) text = `${Math.round(abs / 1_000)}s`;
  else if (abs < 3_600_000) text = `${Math.round(abs / 60_000)}m`;
  else if (abs < 86_400_000) text = `${Math.round(abs / 3_600_000)}h`;
  else text = `${Math.round(abs / 86_400_000)}d`;
  return diff < 0 ? `${text} ago` : `in ${text}`;
}

export function colorStatus(status: RunStatus, c: Colors): string {
  switch (status) {
    case 'completed':
      return c.green(status);
    case 'failed':
      return c.red(status);
    case 'cancelled':
    case 'expired':
      return c.yellow(status);
    case 'waiting_for_input':
      return c.magenta(status);
    case 'waiting_for_children':
      return c.blue(status);
    case 'running':
      return c.cyan(status);
    case 'scheduled':
      return c.blue(status);
    default:
      return c.dim(status);
  }
}

/** How a crew child ended, as its parent's `child.finished` says. */
export function colorChildStatus(status: ChildResultStatus, c: Colors): string {
  switch (status) {
    case 'completed':
      return c.green(status);
    case 'failed':
      return c.red(status);
    case 'escalated':
      return c.magenta(status);
    default:
      return c.yellow(status);
  }
}

/** A todo list, one item a line, with a mark per status. */
export function formatTodos(todos: readonly TodoItem[], c: Colors, indent = '  '): string[] {
  return todos.map((todo) => {
    switch (todo.status) {
      case 'completed':
        return `${indent}${c.green('[x]')} ${c.dim(todo.content)}`;
      case 'in_progress':
        return `${indent}${c.yellow('[>]')} ${c.bold(todo.content)}`;
      case 'cancelled':
        return `${indent}${c.dim('[-]')} ${c.dim(c.strikethrough(todo.content))}`;
      default:
        return `${indent}[ ] ${todo.content}`;
    }
  });
}
