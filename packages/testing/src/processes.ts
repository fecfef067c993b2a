import { type ChildProcess, spawn } from 'node:child_process';
import { basename } from 'node:path';
import { StringDecoder } from 'node:string_decoder';

/** A child process under test, with its output kept for assertions and waiting. */
export interface TestProcess {
  /** Its name in messages (the script's file name unless given). */
  name: string;
  child: ChildProcess;
  /** Everything written to stdout and stderr so far (its last `maxOutputChars`). */
  output(): string;
  /** Resolves when the output matches `pattern` (already or later); rejects after `timeoutMs` or on exit. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * Sends a signal (default SIGTERM) and waits for the exit; SIGKILL follows
   * after `killAfterMs` (default: the spawn option, else never).
   */
  stop(
    signal?: NodeJS.Signals,
    killAfterMs?: number,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** How {@link spawnNode} starts a process. */
export interface SpawnOptions {
  /** Its name in messages. */
  name?: string;
  /** Node's own flags, before the script (`--max-semi-space-size=2`). */
  nodeFlags?: readonly string[];
  /** Start from this process's whole environment instead of PATH and HOME alone (`pnpm start`). */
  inheritEnv?: boolean;
  cwd?: string;
  /** In a process group of its own, so a Ctrl-C at the terminal reaches only the parent. */
  detached?: boolean;
  /** Called with each line of output (stdout and stderr), as it comes. */
  onLine?: (line: string) => void;
  /** How much of the output `output()` keeps, its last characters (default: all). */
  maxOutputChars?: number;
  /** `stop()` sends SIGKILL this long after its signal if the process is still running (default: never). */
  killAfterMs?: number;
}

const running = new Set<ChildProcess>();

/**
 * Starts `node script` with `env` added to a minimal environment (PATH, HOME),
 * or to this process's environment with `inheritEnv`. A variable set to
 * `undefined` in `env` is left out.
 */
export function spawnNode(
  script: string,
  env: Record<string, string | undefined>,
  args: readonly string[] = [],
  options: SpawnOptions = {},
): TestProcess {
  const argv = [...(options.nodeFlags ?? []), script, ...args];
  return spawnProgram(process.execPath, argv, env, { ...options, name: options.name ?? basename(script) });
}

/** Starts `file` (a program on PATH or a path) as {@link spawnNode} starts node: `pnpm start`. */
export function spawnProgram(
  file: string,
  args: readonly string[],
  env: Record<string, string | undefined>,
  options: Omit<SpawnOptions, 'nodeFlags'> = {},
): TestProcess {
  const base = options.inheritEnv
    ? process.env
    : { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
  const child = spawn(file, args, {
    env: definedOnly({ ...base, ...env }),
    cwd: options.cwd,
    detached: options.detached ?? false,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const name = options.name ?? basename(file);
  const limit = options.maxOutputChars ?? Number.POSITIVE_INFINITY;
  let output = '';
  const waiters = new Set<() => void>();
  const onText = (text: string) => {
    output += text;
    if (output.length > limit) output = limit > 0 ? output.slice(-limit) : '';
    for (const waiter of waiters) waiter();
  };
  for (const stream of [child.stdout, child.stderr]) {
    // One decoder per stream: a character split across two chunks is not garbled.
    const decoder = new StringDecoder('utf8');
    const onLine = options.onLine;
    let rest = '';
    stream?.on('data', (chunk: Buffer) => {
      const text = decoder.write(chunk);
      onText(text);
      if (onLine === undefined) return;
      const lines = (rest + text).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    });
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      for (const waiter of waiters) waiter();
      resolve({ code, signal });
    });
  });
  const waitFor = (pattern: RegExp, timeoutMs = 15_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const match = output.match(pattern);
        if (match) {
          finish();
          resolve(match);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          finish();
          reject(new Error(`${name} exited before printing ${pattern}; output:\n${output.slice(-4_000)}`));
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(
          new Error(
            `${name}: timed out after ${timeoutMs} ms waiting for ${pattern}; output:\n${output.slice(-4_000)}`,
          ),
        );
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  return {
    name,
    child,
    output: () => output,
    waitFor,
    exited,
    async stop(signal = 'SIGTERM', killAfterMs = options.killAfterMs) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill(signal);
      if (killAfterMs === undefined) return exited;
      const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

function definedOnly(env: Record<string, string | undefined>): Record<string, string> {
  const defined: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) defined[key] = value;
  return defined;
}

/** Kills (SIGKILL) every process `spawnNode` started that is still running: for afterAll hooks. */
export async function killAllSpawned(): Promise<void> {
  const exits = [...running].map(
    (child) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  );
  await Promise.all(exits);
}

/** A program running in a pseudo-terminal, driven as a person at a terminal would. */
export interface TestTerminal {
  /** Everything the program wrote to the terminal so far. */
  screen(): string;
  /** Types keys (`\r` is Enter). */
  type(keys: string): void;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  exited: Promise<number | null>;
}

/**
 * Runs `node <args>` in a pseudo-terminal through util-linux `script` (on every
 * Debian system), so the program sees a TTY on stdin and stdout.
 */
export function inTerminal(args: string[], env: Record<string, string>): TestTerminal {
  const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;
  const command = [process.execPath, ...args].map(quote).join(' ');
  const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      TERM: 'xterm',
      ...env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  running.add(child);
  let screen = '';
  const waiters = new Set<() => void>();
  child.stdout?.on('data', (chunk: Buffer) => {
    screen += chunk.toString();
    for (const waiter of waiters) waiter();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  return {
    screen: () => screen,
    type: (keys) => {
      child.stdin?.write(keys);
    },
    exited,
    waitFor(pattern, timeoutMs = 20_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (pattern.test(screen)) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${pattern} on the terminal within ${timeoutMs} ms:\n${screen.slice(-3_000)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}
