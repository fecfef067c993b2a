import type { CreateScheduleBody, Schedule, ScheduleCatchUp, ScheduleOverlap } from '@tether/protocol';
import { SCHEDULE_CATCH_UPS, SCHEDULE_OVERLAPS } from '@tether/protocol';
import type { CommandContext, RegisterCommand } from './command-context.js';
import { repeatable } from './command-context.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';
import { relativeTime } from './format.js';
import { runSettings } from './run-command.js';

export interface SchedulesAddOptions {
  cron?: string;
  every?: string;
  tz?: string;
  overlap?: string;
  catchUp?: string;
  session?: string;
  toolset?: string[];
  model?: string;
  replay?: string;
  json?: boolean;
}

/** The body `tether schedules add` sends, from its arguments. Throws `UsageError` for bad ones. */
export async function buildScheduleBody(
  name: string,
  input: string,
  options: SchedulesAddOptions,
): Promise<CreateScheduleBody> {
  if ((options.cron === undefined) === (options.every === undefined)) {
    throw new UsageError('give exactly one of --cron "<pattern>" and --every <duration> (such as 15m)');
  }
  if (input.trim() === '')
    throw new UsageError('the task must not be empty: tether schedules add <name> "what to do"');
  const overlap = oneOf(options.overlap, SCHEDULE_OVERLAPS, '--overlap');
  const catchUp = oneOf(options.catchUp, SCHEDULE_CATCH_UPS, '--catch-up');
  const run = { input, ...(await runSettings(options)) };
  if (options.toolset !== undefined && options.toolset.length > 0)
    Object.assign(run, { toolsets: options.toolset });
  return {
    name,
    ...(options.cron !== undefined ? { cron: options.cron } : {}),
    ...(options.every !== undefined ? { every: options.every } : {}),
    ...(options.tz !== undefined ? { timezone: options.tz } : {}),
    ...(overlap !== undefined ? { overlap: overlap as ScheduleOverlap } : {}),
    ...(catchUp !== undefined ? { catchUp: catchUp as ScheduleCatchUp } : {}),
    ...(options.session !== undefined ? { sessionId: options.session } : {}),
    run,
  };
}

function oneOf(value: string | undefined, allowed: readonly string[], flag: string): string | undefined {
  if (value === undefined || allowed.includes(value)) return value;
  throw new UsageError(`${flag} must be one of ${allowed.join(', ')} (got "${value}")`);
}

/** One line of a schedule: name, state, timing, next tick, last run. */
function line(schedule: Schedule, ctx: CommandContext, now: number): string {
  const { colors: c } = ctx;
  const state = schedule.paused ? c.yellow('paused') : c.green('active');
  const timing = schedule.cron ? `cron "${schedule.cron}" ${schedule.timezone}` : `every ${schedule.every}`;
  const next = schedule.nextRunAt ? `next ${relativeTime(schedule.nextRunAt, now)}` : 'next —';
  const last = schedule.lastRunAt
    ? `last ${relativeTime(schedule.lastRunAt, now)} ${schedule.lastStatus ?? ''} ${c.dim(schedule.lastRunId ?? '')}`
    : 'no run yet';
  return `${c.bold(schedule.name)}  ${state}  ${timing}  ${next}  ${last.trimEnd()}\n`;
}

/** `tether schedules add <name> <task> (--cron … | --every …)`: a new schedule. */
export async function schedulesAddCommand(
  name: string,
  input: string,
  options: SchedulesAddOptions,
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io } = ctx;
  const body = await buildScheduleBody(name, input, options);
  const created = await client.schedules.create(body, io.signal ? { signal: io.signal } : {});
  if (options.json) io.stdout.write(`${JSON.stringify(created)}\n`);
  else io.stdout.write(`Added schedule ${line(created, ctx, (ctx.now ?? Date.now)())}`);
  return EXIT.ok;
}

/** `tether schedules ls`: the tenant's schedules, with their next and last runs. */
export async function schedulesListCommand(
  options: { json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const list = await client.schedules.list(io.signal ? { signal: io.signal } : {});
  if (options.json) {
    io.stdout.write(`${JSON.stringify(list)}\n`);
    return EXIT.ok;
  }
  if (list.data.length === 0) {
    io.stdout.write(
      `${c.dim('No schedules yet. Add one with: tether schedules add nightly "…" --cron "0 3 * * *"')}\n`,
    );
    return EXIT.ok;
  }
  const now = (ctx.now ?? Date.now)();
  for (const schedule of list.data) io.stdout.write(line(schedule, ctx, now));
  return EXIT.ok;
}

/** `tether schedules pause|resume <name>`. */
export async function schedulesPauseCommand(
  name: string,
  pause: boolean,
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io } = ctx;
  const options = io.signal ? { signal: io.signal } : {};
  const schedule = pause
    ? await client.schedules.pause(name, options)
    : await client.schedules.resume(name, options);
  io.stdout.write(`${pause ? 'Paused' : 'Resumed'} ${line(schedule, ctx, (ctx.now ?? Date.now)())}`);
  return EXIT.ok;
}

/** `tether schedules trigger <name>`: fires it now; prints the run's id. */
export async function schedulesTriggerCommand(name: string, ctx: CommandContext): Promise<ExitCode> {
  const { client, io } = ctx;
  const { runId } = await client.schedules.trigger(name, io.signal ? { signal: io.signal } : {});
  io.stdout.write(`Triggered ${name}: run ${runId} (tether status ${runId})\n`);
  return EXIT.ok;
}

/** `tether schedules rm <name>`. */
export async function schedulesRemoveCommand(name: string, ctx: CommandContext): Promise<ExitCode> {
  const { client, io } = ctx;
  await client.schedules.delete(name, io.signal ? { signal: io.signal } : {});
  io.stdout.write(`Deleted schedule ${name}; its runs stay.\n`);
  return EXIT.ok;
}

/** Adds `tether schedules` and its subcommands. */
export const registerScheduleCommands: RegisterCommand = (program, context, done) => {
  const schedules = program
    .command('schedules')
    .description(
      'add, list, pause, resume, trigger and delete schedules: runs on a cron pattern or an interval',
    );
  schedules
    .command('add')
    .description('add a schedule of a run')
    .argument('<name>', 'its name: lowercase letters, digits, - and _')
    .argument('<task>', 'what each run is asked to do')
    .option('--cron <pattern>', 'a cron pattern (5 fields, or 6 with seconds), such as "0 3 * * *"')
    .option('--every <duration>', 'an interval instead: 90s, 15m, 2h, 1d')
    .option('--tz <zone>', 'the IANA time zone of --cron (default UTC)')
    .option(
      '--overlap <policy>',
      `when the last run is still live: ${SCHEDULE_OVERLAPS.join(', ')} (default skip)`,
    )
    .option('--catch-up <policy>', 'a tick missed while no worker ran: one (fire once) or none')
    .option('--session <id>', 'each run a message of this session')
    .option('-t, --toolset <name>', 'a toolset of the runs (repeat for more)', repeatable)
    .option('-m, --model <profile>', "the runs' model profile")
    .option('--replay <file>', 'a JSON replay script instead of a model (servers that allow it)')
    .option('--json', 'print the schedule as JSON')
    .action(async (name: string, task: string, options: SchedulesAddOptions) => {
      done(await schedulesAddCommand(name, task, options, context()));
    });
  schedules
    .command('ls')
    .description('list your schedules, with their next tick and last run')
    .option('--json', 'print the list as JSON')
    .action(async (options: { json?: boolean }) => {
      done(await schedulesListCommand(options, context()));
    });
  for (const [command, pause] of [
    ['pause', true],
    ['resume', false],
  ] as const) {
    schedules
      .command(command)
      .description(
        pause
          ? 'stop firing a schedule until it is resumed'
          : 'fire a paused schedule again from its next tick',
      )
      .argument('<name>', 'the schedule')
      .action(async (name: string) => {
        done(await schedulesPauseCommand(name, pause, context()));
      });
  }
  schedules
    .command('trigger')
    .description('fire a schedule now')
    .argument('<name>', 'the schedule')
    .action(async (name: string) => {
      done(await schedulesTriggerCommand(name, context()));
    });
  schedules
    .command('rm')
    .description('delete a schedule (its runs stay)')
    .argument('<name>', 'the schedule')
    .action(async (name: string) => {
      done(await schedulesRemoveCommand(name, context()));
    });
};
