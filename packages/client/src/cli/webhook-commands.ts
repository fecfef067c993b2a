import type { WebhookDelivery } from '@tether/protocol';
import type { CommandContext, RegisterCommand } from './command-context.js';
import { repeatable } from './command-context.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';
import { relativeTime, truncate } from './format.js';

/**
 * `tether webhooks add <url> --event <type>…`: a new endpoint; prints its id and its signing
 * secret, which is shown only this once.
 */
export async function webhooksAddCommand(
  url: string,
  options: { event?: string[]; description?: string; json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const events = options.event ?? ['*'];
  const created = await client.webhooks.create(
    { url, events: events as never, ...(options.description ? { description: options.description } : {}) },
    io.signal ? { signal: io.signal } : {},
  );
  if (options.json) {
    io.stdout.write(`${JSON.stringify(created)}\n`);
    return EXIT.ok;
  }
  io.stdout.write(`Added webhook ${c.bold(created.id)} for ${created.events.join(', ')} → ${created.url}\n`);
  io.stdout.write(`Signing secret (shown only now): ${created.secret}\n`);
  return EXIT.ok;
}

/** `tether webhooks ls`: the tenant's endpoints, oldest first. */
export async function webhooksListCommand(
  options: { json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const list = await client.webhooks.list(io.signal ? { signal: io.signal } : {});
  if (options.json) {
    io.stdout.write(`${JSON.stringify(list)}\n`);
    return EXIT.ok;
  }
  if (list.data.length === 0) {
    io.stdout.write(
      `${c.dim('No webhooks yet. Add one with: tether webhooks add <url> --event run.failed')}\n`,
    );
    return EXIT.ok;
  }
  for (const hook of list.data) {
    const state = hook.enabled
      ? hook.failingSince
        ? c.yellow(`failing since ${hook.failingSince}`)
        : c.green('enabled')
      : c.red(`disabled ${hook.disabledAt ?? ''}${hook.disabledReason ? ` (${hook.disabledReason})` : ''}`);
    const description = hook.description ? `  ${c.dim(truncate(hook.description, 60))}` : '';
    io.stdout.write(`${c.dim(hook.id)}  ${state}  ${hook.url}  ${hook.events.join(',')}${description}\n`);
  }
  return EXIT.ok;
}

/** `tether webhooks rm <id>`. */
export async function webhooksRemoveCommand(id: string, ctx: CommandContext): Promise<ExitCode> {
  const { client, io } = ctx;
  await client.webhooks.delete(id, io.signal ? { signal: io.signal } : {});
  io.stdout.write(`Deleted webhook ${id}.\n`);
  return EXIT.ok;
}

/** `tether webhooks deliveries <id>`: the endpoint's deliveries, newest first, one page. */
export async function webhooksDeliveriesCommand(
  id: string,
  options: { limit?: string; cursor?: string; json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  let limit: number | undefined;
  if (options.limit !== undefined) {
    limit = Number(options.limit);
    if (!(Number.isInteger(limit) && limit > 0)) {
      throw new UsageError(`--limit must be a whole number above 0 (got "${options.limit}")`);
    }
  }
  const page = await client.webhooks.deliveries(
    id,
    { limit, cursor: options.cursor },
    io.signal ? { signal: io.signal } : {},
  );
  if (options.json) {
    io.stdout.write(`${JSON.stringify(page)}\n`);
    return EXIT.ok;
  }
  if (page.data.length === 0) {
    io.stdout.write(`${c.dim(`No deliveries to ${id} yet.`)}\n`);
    return EXIT.ok;
  }
  const now = (ctx.now ?? Date.now)();
  const colour = (delivery: WebhookDelivery) =>
    delivery.status === 'delivered'
      ? c.green(delivery.status)
      : delivery.status === 'pending'
        ? c.yellow(delivery.status)
        : c.red(delivery.status);
  for (const delivery of page.data) {
    const last = delivery.lastStatus ?? '';
    const next = delivery.nextAttemptAt ? ` next ${relativeTime(delivery.nextAttemptAt, now)}` : '';
    const error =
      delivery.lastError && delivery.status !== 'delivered' ? `  ${truncate(delivery.lastError, 60)}` : '';
    io.stdout.write(
      `${c.dim(delivery.id)}  ${colour(delivery).padEnd(9)}  ${delivery.type.padEnd(17)}  ${delivery.runId}  ${c.dim(`${delivery.attempts} attempt${delivery.attempts === 1 ? '' : 's'}`)} ${last}${next}${error}\n`,
    );
  }
  if (page.nextCursor) {
    io.stdout.write(`${c.dim(`more: tether webhooks deliveries ${id} --cursor ${page.nextCursor}`)}\n`);
  }
  return EXIT.ok;
}

/** Adds `tether webhooks` and its subcommands. */
export const registerWebhookCommands: RegisterCommand = (program, context, done) => {
  const webhooks = program
    .command('webhooks')
    .description('add, list and delete webhook endpoints, and see their deliveries');
  webhooks
    .command('add')
    .description('add an endpoint; prints its id and signing secret (shown only then)')
    .argument('<url>', 'where the events are POSTed (https; http and loopback too on pnpm start)')
    .option(
      '-e, --event <type>',
      'an event type to send (repeat for more; default every type, *)',
      repeatable,
    )
    .option('-d, --description <text>', 'what it is for')
    .option('--json', 'print the endpoint as JSON')
    .action(async (url: string, options: { event?: string[]; description?: string; json?: boolean }) => {
      done(await webhooksAddCommand(url, options, context()));
    });
  webhooks
    .command('ls')
    .description('list your endpoints, and whether each is enabled, failing or disabled')
    .option('--json', 'print the list as JSON')
    .action(async (options: { json?: boolean }) => {
      done(await webhooksListCommand(options, context()));
    });
  webhooks
    .command('rm')
    .description('delete an endpoint')
    .argument('<id>', 'the endpoint id (whk_…)')
    .action(async (id: string) => {
      done(await webhooksRemoveCommand(id, context()));
    });
  webhooks
    .command('deliveries')
    .description("list an endpoint's deliveries, newest first: status, attempts, last answer, next retry")
    .argument('<id>', 'the endpoint id (whk_…)')
    .option('--limit <n>', 'deliveries per page')
    .option('--cursor <cursor>', 'the page after this cursor')
    .option('--json', 'print the page as JSON')
    .action(async (id: string, options: { limit?: string; cursor?: string; json?: boolean }) => {
      done(await webhooksDeliveriesCommand(id, options, context()));
    });
};
