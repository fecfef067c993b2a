import { type ChildProcess, spawn } from 'node:child_process';

/** A child process under test, with its output kept for assertions and waiting. */
export interface TestProcess {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves when the output matches `pattern` (already or later); rejects after `timeoutMs` or on exit. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends a signal (default SIGTERM) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<ChildProcess>();

/** Starts `node script` with `env` added to a minimal environment (PATH, HOME). */
export function spawnNode(script: string, env: Record<string, string>, args: string[] = []): TestProcess {
  const child = spawn(process.execPath, [script, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const waiter of waiters) waiter();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
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
          reject(new Error(`process exited before printing ${pattern}; output:\n${output.slice(-4_000)}`));
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${pattern}; output:\n${output.slice(-4_000)}`,
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
    child,
    output: () => output,
    waitFor,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
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
