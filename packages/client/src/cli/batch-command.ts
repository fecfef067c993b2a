import { readFile } from 'node:fs/promises';
import { BATCH_LIMITS, type Batch, type CreateRunBody } from '@tether/protocol';
import { sleep } from '../sleep.js';
import type { CommandContext, RegisterCommand } from './command-context.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';

export interface BatchCommandOptions {
  show?: string;
  cancel?: string;
  wait?: boolean;
  json?: boolean;
}

/**
 * `tether batch <file.jsonl>`: one run body a line (blank lines skipped), submitted as one batch
 * (`POST /v1/batches`, all or none); prints its id and run ids, and with `--wait` follows it to
 * its end. `--show <id>` prints a batch's counts, `--cancel <id>` cancels its live runs. Exit 0,
 * or 1 when `--wait` saw a run fail or be cancelled.
 */
export async function batchCommand(
  file: string | undefined,
  options: BatchCommandOptions,
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const signal = io.signal ? { signal: io.signal } : {};
  const chosen = [file, options.show, options.cancel].filter((value) => value !== undefined);
  if (chosen.length !== 1) {
    throw new UsageError(
      'give a file of run bodies (JSON Lines), or --show <batch id>, or --cancel <batch id>',
    );
  }
  if (options.cancel !== undefined) {
    const answer = await client.cancelBatch(options.cancel, signal);
    io.stdout.write(
      options.json
        ? `${JSON.stringify(answer)}\n`
        : `Cancelled ${answer.cancelled} live runs of ${answer.id}.\n`,
    );
    return EXIT.ok;
  }
  if (options.show !== undefined) return show(await client.batch(options.show, signal), options, ctx);

  const runs = await readRuns(file as string);
  const created = await client.submitBatch(runs, signal);
  if (options.json && !options.wait) {
    io.stdout.write(`${JSON.stringify(created)}\n`);
    return EXIT.ok;
  }
  if (!options.json) {
    io.stdout.write(`${c.bold(created.id)}: ${created.total} runs\n`);
    for (const id of created.runIds) io.stdout.write(`  ${id}\n`);
  }
  if (!options.wait) return EXIT.ok;
  let batch = await client.batch(created.id, { ...signal, limit: 1 });
  while (batch.status !== 'completed') {
    await sleep(1_000, io.signal);
    batch = await client.batch(created.id, { ...signal, limit: 1 });
  }
  return show(batch, options, ctx);
}

/** A batch's counts (or its JSON); exit 1 when any of its runs failed or was cancelled. */
function show(batch: Batch, options: BatchCommandOptions, ctx: CommandContext): ExitCode {
  const { io, colors: c } = ctx;
  if (options.json) io.stdout.write(`${JSON.stringify(batch)}\n`);
  else {
    const counts = Object.entries(batch.counts)
      .map(([status, count]) => `${count} ${status}`)
      .join(', ');
    io.stdout.write(`${c.bold(batch.id)}: ${batch.status}, ${batch.total} runs (${counts})\n`);
  }
  const bad = (batch.counts.failed ?? 0) + (batch.counts.cancelled ?? 0);
  return batch.status === 'completed' && bad > 0 ? EXIT.failed : EXIT.ok;
}

/** The run bodies of a JSON Lines file, each an object; a bad line is named. */
export async function readRuns(file: string): Promise<CreateRunBody[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  const runs: CreateRunBody[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    let body: unknown;
    try {
      body = JSON.parse(line);
    } catch {
      throw new UsageError(`${file} line ${index + 1} is not JSON`);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new UsageError(`${file} line ${index + 1} must be a run body (a JSON object with "input")`);
    }
    runs.push(body as CreateRunBody);
  }
  if (runs.length === 0) throw new UsageError(`${file} holds no run bodies`);
  if (runs.length > BATCH_LIMITS.maxRuns) {
    throw new UsageError(`${file} holds ${runs.length} runs; a batch holds at most ${BATCH_LIMITS.maxRuns}`);
  }
  return runs;
}

export const registerBatchCommand: RegisterCommand = (program, context, done) => {
  program
    .command('batch [file]')
    .description(
      'submit runs as one batch, all or none (a JSON Lines file of run bodies); or show or cancel one',
    )
    .option('--wait', 'follow the batch until every run has ended, then print its counts')
    .option('--show <id>', "print a batch's runs counted by status")
    .option('--cancel <id>', "cancel a batch's live runs")
    .option('--json', "print the API's answer as JSON")
    .action(async (file: string | undefined, options: BatchCommandOptions) => {
      done(await batchCommand(file, options, context()));
    });
};
