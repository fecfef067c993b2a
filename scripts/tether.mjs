#!/usr/bin/env node
// pnpm tether …: the CLI built in packages/client. pnpm runs scripts in the repository's root, and
// INIT_CWD is the directory the command was typed in: the CLI runs there, so that its paths (--files,
// --replay, skills push) are the caller's, as they are for a `tether` installed with npm.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stackFilePath, stackHome } from './start/stack-file.mjs';

const cli = new URL('../packages/client/dist/cli.js', import.meta.url);
if (!existsSync(fileURLToPath(cli))) {
  console.error('tether: the CLI is not built. Run `pnpm build` (or `pnpm start`, which builds) first.');
  process.exit(2);
}
// The repository's running `pnpm start` (TETHER_HOME as pnpm start reads it), wherever the command is
// typed: the CLI looks there unless TETHER_URL or --url says otherwise.
const root = fileURLToPath(new URL('..', import.meta.url));
process.env.TETHER_STACK_FILE ??= stackFilePath(stackHome(root, process.env));
// Only as the `tether` script: INIT_CWD may be left over from another script this one runs under.
const caller = process.env.npm_lifecycle_event === 'tether' ? process.env.INIT_CWD : undefined;
if (caller) process.chdir(caller);
await import(cli.href);
