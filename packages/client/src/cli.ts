#!/usr/bin/env node
/**
 * The `tether` command: the only place the CLI reads the process (argv, env,
 * stdio) and handles signals. Everything else is `runCli`, which takes them as
 * arguments.
 */
import { runCli } from './cli/program.js';

const controller = new AbortController();
let interrupts = 0;
let trap: (() => boolean) | undefined;
process.on('SIGINT', () => {
  // A command that took Ctrl-C over (tether chat: cancel the run, then quit) decides.
  if (trap) {
    if (!trap()) process.exit(130);
    return;
  }
  interrupts++;
  // The first Ctrl-C stops following cleanly; a second one does not wait.
  if (interrupts > 1) process.exit(130);
  controller.abort(new Error('interrupted'));
});

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  signal: controller.signal,
  onInterrupt: (handler) => {
    trap = handler;
    return () => {
      if (trap === handler) trap = undefined;
    };
  },
});
process.exitCode = code;
