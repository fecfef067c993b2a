#!/usr/bin/env node
// pnpm demo: a replay-model run end to end against the local stack (`pnpm start`), with no LLM key:
// a todo list, list_dir, read_file, a fuzzy patch, bash, and a clarify question answered here
// (or timing out after 60 s). Pass-through options go to `tether run` (e.g. --json, --url).
// The API is the running `pnpm start`'s (its .tether/stack.json, under TETHER_HOME if set), unless
// TETHER_URL or --url says otherwise.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stackFilePath, stackHome } from './start/stack-file.mjs';

const cli = fileURLToPath(new URL('../packages/client/dist/cli.js', import.meta.url));
const script = fileURLToPath(new URL('./demo/replay.json', import.meta.url));
const project = fileURLToPath(new URL('./demo/project', import.meta.url));
if (!existsSync(cli)) {
  console.error('tether demo: the CLI is not built. Run `pnpm build` (or `pnpm start`, which builds) first.');
  process.exit(2);
}
const passed = process.argv.slice(2);
const task = 'Fix the greeting in greet.js and check that it works.';
const args = [
  cli,
  'run',
  task,
  '--replay',
  script,
  '--files',
  project,
  '--timeout',
  '60s',
  // A leading `--` (pnpm demo -- --json) is pnpm's, not the CLI's.
  ...(passed[0] === '--' ? passed.slice(1) : passed),
];
const root = fileURLToPath(new URL('..', import.meta.url));
const env = {
  ...process.env,
  TETHER_STACK_FILE: process.env.TETHER_STACK_FILE ?? stackFilePath(stackHome(root, process.env)),
};
const child = spawn(process.execPath, args, { stdio: 'inherit', env });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
