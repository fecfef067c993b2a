import path from 'node:path';
import { SKILL_LIMITS } from '@tether/protocol';
import { collectFiles, formatBytes } from './collect-files.js';
import type { CommandContext, RegisterCommand } from './command-context.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import { relativeTime, truncate } from './format.js';

/**
 * `tether skills push DIR`: sends a skill folder as the skill of its name
 * (the folder's, or `--name`): its text files, `SKILL.md` first among them.
 * Binary files and links are left out, and said so: a skill holds text.
 */
export async function skillsPushCommand(
  folder: string,
  options: { name?: string; pinned?: boolean; json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c, errColors } = ctx;
  const name = options.name ?? path.basename(path.resolve(folder));
  const collected = await collectFiles(folder, {
    maxBytes: SKILL_LIMITS.bodyMaxBytes,
    flag: 'tether skills push',
  });
  for (const skipped of collected.skipped) {
    const why = skipped.reason === 'link' ? 'a link' : 'not text';
    io.stderr.write(`${errColors.yellow(`skipped ${skipped.path} (${why}: a skill holds text files)`)}\n`);
  }
  const summary = await client.skills.put(
    name,
    { files: collected.files, ...(options.pinned === undefined ? {} : { pinned: options.pinned }) },
    io.signal ? { signal: io.signal } : {},
  );
  if (options.json) {
    io.stdout.write(`${JSON.stringify(summary)}\n`);
    return EXIT.ok;
  }
  // A replace moves updatedAt on; a new skill's two times are one.
  const created = summary.createdAt === summary.updatedAt;
  io.stdout.write(
    `${created ? 'Created' : 'Replaced'} skill ${c.bold(summary.name)}: version ${summary.version}, ${summary.fileCount} file${summary.fileCount === 1 ? '' : 's'}, ${formatBytes(summary.bytes)}${summary.pinned ? `, ${c.cyan('pinned')}` : ''}.\n`,
  );
  return EXIT.ok;
}

/** `tether skills ls`: the tenant's skills, by name, and its totals. */
export async function skillsListCommand(options: { json?: boolean }, ctx: CommandContext): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const list = await client.skills.list(io.signal ? { signal: io.signal } : {});
  if (options.json) {
    io.stdout.write(`${JSON.stringify(list)}\n`);
    return EXIT.ok;
  }
  if (list.data.length === 0) {
    io.stdout.write(`${c.dim('No skills yet. Send one with: tether skills push <folder>')}\n`);
    return EXIT.ok;
  }
  const now = (ctx.now ?? Date.now)();
  const nameWidth = Math.max(4, ...list.data.map((s) => s.name.length));
  io.stdout.write(`${c.dim(`${'NAME'.padEnd(nameWidth)}  FILES      SIZE  UPDATED   DESCRIPTION`)}\n`);
  for (const skill of list.data) {
    const pinned = skill.pinned ? `${c.cyan('[pinned]')} ` : '';
    io.stdout.write(
      `${skill.name.padEnd(nameWidth)}  ${String(skill.fileCount).padStart(5)}  ${formatBytes(skill.bytes).padStart(8)}  ${relativeTime(skill.updatedAt, now).padEnd(8)}  ${pinned}${truncate(skill.description.replace(/\s+/g, ' '), 60)}\n`,
    );
  }
  io.stdout.write(
    `${c.dim(`${list.count} of ${list.maxCount} skills, ${formatBytes(list.bytes)} of ${formatBytes(list.maxBytes)}`)}\n`,
  );
  return EXIT.ok;
}

/** `tether skills rm NAME`. */
export async function skillsRemoveCommand(name: string, ctx: CommandContext): Promise<ExitCode> {
  const { client, io } = ctx;
  await client.skills.delete(name, io.signal ? { signal: io.signal } : {});
  io.stdout.write(`Deleted skill ${name}.\n`);
  return EXIT.ok;
}

/** Adds `tether skills` and its subcommands. */
export const registerSkillCommands: RegisterCommand = (program, context, done) => {
  const skills = program.command('skills').description("send, list and delete your tenant's skills");
  skills
    .command('push')
    .description('create or replace a skill from a folder (SKILL.md and its other text files)')
    .argument('<folder>', 'the skill folder; its name is the skill name')
    .option('--name <name>', 'the skill name, when it is not the folder name')
    .option('--pinned', 'pin it: runs cannot change or delete it')
    .option('--no-pinned', 'unpin it')
    .option('--json', 'print the summary as JSON')
    .action(async (folder: string, options: { name?: string; pinned?: boolean; json?: boolean }) => {
      done(await skillsPushCommand(folder, options, context()));
    });
  skills
    .command('ls')
    .description('list your skills, by name')
    .option('--json', 'print the list as JSON')
    .action(async (options: { json?: boolean }) => {
      done(await skillsListCommand(options, context()));
    });
  skills
    .command('rm')
    .description('delete a skill')
    .argument('<name>', 'skill name')
    .action(async (name: string) => {
      done(await skillsRemoveCommand(name, context()));
    });
};
