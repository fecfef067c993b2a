import { readFile } from 'node:fs/promises';
import type { CreateRunBody, ReplayScript } from '@tether/protocol';
import { APPROVAL_LIMITS, APPROVAL_TOOL_PATTERN } from '@tether/protocol';
import { Option } from 'commander';
import { collectFiles, formatBytes } from './collect-files.js';
import type { CommandContext, RegisterCommand } from './command-context.js';
import { repeatable } from './command-context.js';
import { parseDuration } from './duration.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';
import { followRun } from './follow.js';
import { parseMcpFlags } from './mcp-commands.js';

export interface RunCommandOptions {
  model?: string;
  /** A JSON file holding a replay script (the server must allow the replay provider). */
  replay?: string;
  files?: string;
  timeout?: string;
  locale?: string;
  /** `--mcp`, repeated: MCP server names, or `name=url`. */
  mcp?: string[];
  /** `--require-approval`, repeated: tools whose calls wait for a decision (names, or prefixes ending in `*`). */
  requireApproval?: string[];
  /** A JSON file holding a JSON Schema: the run's structured result (`output.schema`). */
  schema?: string;
  json?: boolean;
}

/** The body `tether run` submits, from its arguments. Throws `UsageError` for bad ones. */
export async function buildRunBody(
  task: string,
  options: RunCommandOptions,
): Promise<{ body: CreateRunBody; skipped: Array<{ path: string; reason: string }> }> {
  if (task.trim() === '') throw new UsageError('the task must not be empty: tether run "what to do"');
  const body: CreateRunBody = { input: task, ...(await runSettings(options)) };
  let skipped: Array<{ path: string; reason: string }> = [];
  if (options.files !== undefined) {
    const collected = await collectFiles(options.files);
    body.files = collected.files;
    skipped = collected.skipped;
  }
  if (options.mcp !== undefined && options.mcp.length > 0) body.mcpServers = parseMcpFlags(options.mcp);
  if (options.schema !== undefined) body.output = { schema: await readSchema(options.schema) };
  return { body, skipped };
}

/**
 * The run's model, locale, question timeout and approval policy from the flags. Throws
 * `UsageError` for bad ones.
 */
export async function runSettings(
  options: Pick<RunCommandOptions, 'model' | 'replay' | 'locale' | 'timeout' | 'requireApproval'>,
): Promise<Pick<CreateRunBody, 'model' | 'locale' | 'clarify' | 'approval'>> {
  const body: Pick<CreateRunBody, 'model' | 'locale' | 'clarify' | 'approval'> = {};
  if (options.model !== undefined && options.replay !== undefined) {
    throw new UsageError('--model and --replay cannot be used together');
  }
  if (options.model !== undefined) body.model = { profile: options.model };
  if (options.replay !== undefined)
    body.model = { provider: 'replay', script: await readReplay(options.replay) };
  if (options.locale !== undefined) {
    if (options.locale !== 'zh' && options.locale !== 'en') {
      throw new UsageError(`--locale must be zh or en (got "${options.locale}")`);
    }
    body.locale = options.locale;
  }
  if (options.timeout !== undefined)
    body.clarify = { timeoutMs: parseDuration(options.timeout, '--timeout') };
  if (options.requireApproval !== undefined && options.requireApproval.length > 0) {
    body.approval = { tools: approvalTools(options.requireApproval) };
  }
  return body;
}

/** `--require-approval`'s tools, each once, checked as the API checks them. */
function approvalTools(given: readonly string[]): string[] {
  const tools = [...new Set(given)];
  const pattern = new RegExp(APPROVAL_TOOL_PATTERN);
  for (const tool of tools) {
    if (!pattern.test(tool)) {
      throw new UsageError(
        `--require-approval must name a tool (letters, digits, _ or -), which may end in * (got "${tool}")`,
      );
    }
  }
  if (tools.length > APPROVAL_LIMITS.maxTools) {
    throw new UsageError(
      `--require-approval names at most ${APPROVAL_LIMITS.maxTools} tools (got ${tools.length})`,
    );
  }
  return tools;
}

/** Reads `--schema`: a JSON object (the server checks it is a JSON Schema of an object). */
async function readSchema(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new UsageError(`--schema ${path}: cannot read the file`);
  }
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch {
    throw new UsageError(`--schema ${path}: not valid JSON`);
  }
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new UsageError(`--schema ${path}: must be a JSON object (a JSON Schema with "type": "object")`);
  }
  return schema as Record<string, unknown>;
}

/** Reads a replay script: a JSON array of turns (`{ toolCalls: [...] }` or `{ content }`). */
async function readReplay(path: string): Promise<ReplayScript> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new UsageError(`--replay ${path}: cannot read the file`);
  }
  let script: unknown;
  try {
    script = JSON.parse(text);
  } catch {
    throw new UsageError(`--replay ${path}: not valid JSON`);
  }
  if (!Array.isArray(script) || script.length === 0) {
    throw new UsageError(
      `--replay ${path}: must be a JSON array of turns ({ "toolCalls": [...] } or { "content": "..." })`,
    );
  }
  // The server checks each turn against the protocol's schema and names what is wrong.
  return script as ReplayScript;
}

/**
 * `tether run`: submits, follows the stream (asking questions and for
 * decisions on held tool calls when interactive), then prints the files the
 * run left. With `--schema`, the run's result is printed as JSON in place of
 * its output. Exit 0 when the run
 * completed, 1 when it failed or was cancelled.
 */
export async function runCommand(
  task: string,
  options: RunCommandOptions,
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const json = options.json === true;
  const { body, skipped } = await buildRunBody(task, options);
  if (!json && skipped.length > 0) {
    io.stderr.write(
      ctx.errColors.yellow(`Skipped ${skipped.map((s) => `${s.path} (${s.reason})`).join(', ')}\n`),
    );
  }
  const submitted = await client.submit(body, {
    idempotencyKey: globalThis.crypto.randomUUID(),
    ...(io.signal ? { signal: io.signal } : {}),
  });
  ctx.onRun?.(submitted.id);
  if (!json) {
    const sent = body.files ? `, ${Object.keys(body.files).length} files` : '';
    io.stdout.write(
      `${c.bold(`Run ${submitted.id}`)} ${c.dim(`submitted${sent}. Ctrl-C stops following; the run goes on.`)}\n`,
    );
  }
  const { terminal, view } = await followRun({
    client,
    runId: submitted.id,
    stdout: io.stdout,
    stdin: io.stdin,
    colors: c,
    json,
    prompt: ctx.interactive,
    signal: io.signal,
    ...(ctx.now ? { now: ctx.now } : {}),
  });
  if (view) {
    if (view.usage) {
      view.line(c.dim(`tokens: ${view.usage.inputTokens} in, ${view.usage.outputTokens} out`));
    }
    await printFiles(ctx, submitted.id, new Set(Object.keys(body.files ?? {})));
  }
  return terminal?.type === 'run.completed' ? EXIT.ok : EXIT.failed;
}

/** Lists what the run left in its workspace, marking files it did not receive as new. */
async function printFiles(ctx: CommandContext, runId: string, sent: ReadonlySet<string>): Promise<void> {
  const { client, io, colors: c } = ctx;
  const { files, truncated } = await client.files(runId, io.signal ? { signal: io.signal } : {});
  if (files.length === 0) return;
  io.stdout.write(`\n${c.bold(`Files in the workspace (${files.length}${truncated ? '+' : ''})`)}\n`);
  const width = Math.min(60, Math.max(...files.map((f) => f.path.length)));
  for (const file of files) {
    const mark = sent.has(file.path) ? '' : c.green(' new');
    io.stdout.write(`  ${file.path.padEnd(width)}  ${c.dim(formatBytes(file.size))}${mark}\n`);
  }
  if (truncated) io.stdout.write(`${c.dim('  (the server listed only the first files)')}\n`);
}

/** Adds `tether run`. */
export const registerRunCommand: RegisterCommand = (program, context, done) => {
  program
    .command('run')
    .description('submit a task, follow it live, answer its questions and decide on its held tool calls')
    .argument('<task>', 'what the agent should do')
    .option('--model <profile>', 'a model profile configured on the server')
    .option(
      '--replay <file>',
      'play a scripted model from a JSON file (demos and tests; the server must allow it)',
    )
    .option('--files <dir>', "send this directory's text files (up to 1 MiB; skips node_modules and .git)")
    .option('--timeout <duration>', 'how long each question waits for an answer: 30s, 10m, 1h, or ms')
    .addOption(new Option('--locale <locale>', 'language of the run').choices(['zh', 'en']))
    .option(
      '--require-approval <tool>',
      'ask before each call of this tool runs: approve, edit or reject it (repeatable; a prefix may end in *)',
      repeatable,
    )
    .option(
      '--mcp <server>',
      "an MCP server whose tools the run gets: a registered one's name (tether mcp ls), or name=url (repeatable)",
      repeatable,
    )
    .option(
      '--schema <file>',
      'a JSON Schema (an object schema) the run must give its result in: printed as JSON when it completes',
    )
    .option('--json', 'print events as JSON lines, and never prompt')
    .action(async (task: string, options: RunCommandOptions) => {
      done(await runCommand(task, options, context()));
    });
};
