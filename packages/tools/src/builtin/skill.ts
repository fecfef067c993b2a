/**
 * The skill toolset: `read_skill`, `read_skill_file` and `skill_manage`.
 *
 * Skills are the tenant's, in the store the run context reaches
 * (`ctx.skills`: the worker's, on Redis), not files of the workspace. What
 * the agent writes passes the format check (`skill/skill-format.ts`) and the
 * content guard (`guard.ts`, memory's too) before it is stored, and a pinned
 * skill (set through the API) is never changed by the agent: the store
 * refuses it in the step that writes. A patch follows the rules of the
 * `patch` tool (`patchText`) and is stored only if the skill did not change
 * since it was read.
 */
import { type Static, Type } from '@sinclair/typebox';
import { SKILL_LIMITS, type SkillSummary, type SkillWrite, type SkillWriteResult } from '@tether/protocol';
import { defineTool } from '../define-tool.js';
import { ToolError } from '../errors.js';
import { guardContent } from '../guard.js';
import {
  fileSizeProblem,
  parseSkillMd,
  SKILL_FILE,
  skillNameProblem,
  skillPathProblem,
} from '../skill/skill-format.js';
import type { ToolEnvironment } from '../tool-environment.js';
import type { SkillsAccess, Tool, ToolSchema } from '../types.js';
import { patchText } from './patch.js';

/** The skill tools, in catalog order. */
export const SKILL_TOOL_NAMES = ['read_skill', 'read_skill_file', 'skill_manage'] as const;

/** What `skill_manage` can do. */
export const SKILL_ACTIONS = ['create', 'edit', 'patch', 'delete', 'write_file', 'remove_file'] as const;
export type SkillAction = (typeof SKILL_ACTIONS)[number];

const name = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'The skill name, as the skills list shows it',
});

/** Parameters of `read_skill`. */
export const ReadSkillParams = Type.Object({ name }, { additionalProperties: false });

/** Parameters of `read_skill_file`. */
export const ReadSkillFileParams = Type.Object(
  {
    name,
    path: Type.String({
      minLength: 1,
      maxLength: SKILL_LIMITS.pathMaxChars,
      description: 'A file of the skill, relative to its folder, as read_skill lists it (references/api.md)',
    }),
  },
  { additionalProperties: false },
);

/** Parameters of `skill_manage`: which fields each action takes is in its description and checked. */
export const SkillManageParams = Type.Object(
  {
    action: Type.Union(
      SKILL_ACTIONS.map((action) => Type.Literal(action)),
      {
        description:
          'create (name, content), edit (name, content), patch (name, old_string, new_string, replace_all?, file_path?), delete (name), write_file (name, file_path, file_content), remove_file (name, file_path)',
      },
    ),
    name: Type.String({
      minLength: 1,
      maxLength: SKILL_LIMITS.nameMaxChars,
      description: 'The skill (folder) name: lowercase letters, digits and single hyphens, such as pdf-forms',
    }),
    content: Type.Optional(
      Type.String({
        maxLength: SKILL_LIMITS.skillMdMaxChars,
        description:
          'create, edit: the whole SKILL.md: YAML frontmatter (name: the skill name; description: what it does and when to use it) between --- lines, then the steps',
      }),
    ),
    old_string: Type.Optional(Type.String({ description: 'patch: the text to find in the file' })),
    new_string: Type.Optional(Type.String({ description: 'patch: the text to put in its place' })),
    replace_all: Type.Optional(
      Type.Boolean({ description: 'patch: replace every match instead of requiring one. Default false.' }),
    ),
    file_path: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: SKILL_LIMITS.pathMaxChars,
        description:
          'patch (default SKILL.md), write_file, remove_file: a file of the skill, relative to its folder (scripts/run.sh, references/notes.md, templates/…, assets/…)',
      }),
    ),
    file_content: Type.Optional(Type.String({ description: 'write_file: the whole content of the file' })),
  },
  { additionalProperties: false },
);

/** Catalog entry of `read_skill` (toolset `skill`). */
export const readSkillSchema: ToolSchema<typeof ReadSkillParams> = {
  name: 'read_skill',
  toolset: 'skill',
  description:
    "Load a skill: its SKILL.md (the procedure to follow) and the list of its other files. Load the skill that matches a task before you act on it. An unknown name returns every skill's name and description.",
  parameters: ReadSkillParams,
};

/** Catalog entry of `read_skill_file` (toolset `skill`). */
export const readSkillFileSchema: ToolSchema<typeof ReadSkillFileParams> = {
  name: 'read_skill_file',
  toolset: 'skill',
  description:
    'Read one file of a skill (a reference, a script, a template), by its path inside the skill as read_skill lists it.',
  parameters: ReadSkillFileParams,
};

/** Catalog entry of `skill_manage` (toolset `skill`). */
export const skillManageSchema: ToolSchema<typeof SkillManageParams> = {
  name: 'skill_manage',
  toolset: 'skill',
  description:
    'Write down a procedure that worked, for later runs, as a skill, or improve one: create (SKILL.md in content), edit (the whole SKILL.md), patch (old_string → new_string in SKILL.md or file_path), delete, write_file (file_path, file_content), remove_file (file_path). SKILL.md starts with YAML frontmatter holding name (the skill name) and description (what it does and when to use it, no < or >), then the steps. Pinned skills cannot be changed.',
  parameters: SkillManageParams,
};

/** The fields each action takes besides `action` and `name`: the required ones, then the optional ones. */
const ACTION_FIELDS: Readonly<Record<SkillAction, { required: string[]; optional: string[] }>> = {
  create: { required: ['content'], optional: [] },
  edit: { required: ['content'], optional: [] },
  patch: { required: ['old_string', 'new_string'], optional: ['replace_all', 'file_path'] },
  delete: { required: [], optional: [] },
  write_file: { required: ['file_path', 'file_content'], optional: [] },
  remove_file: { required: ['file_path'], optional: [] },
};

/** The skills list in a tool result: at most this many characters. */
const LIST_BUDGET_CHARS = 20_000;
/** A file longer than this may be cut by the tool-result limit: the result says how to read it in parts. */
const LONG_FILE_CHARS = 25_000;

function quote(text: string): string {
  return JSON.stringify(text);
}

function unavailable(): ToolError {
  return new ToolError(
    'ERR_TOOL_SKILLS_UNAVAILABLE',
    'Skills are not available in this host (no skill store). Continue without them.',
  );
}

/** `- name: description` for every skill, descriptions shortened evenly to fit the budget. */
export function formatSkillList(skills: readonly SkillSummary[], budget = LIST_BUDGET_CHARS): string {
  const line = (skill: SkillSummary, cap: number) => {
    const description = skill.description.replace(/\s+/g, ' ').trim();
    const text = description.length > cap ? `${description.slice(0, Math.max(0, cap - 1))}…` : description;
    return `- ${skill.name}${skill.pinned ? ' (pinned)' : ''}: ${text}`;
  };
  let cap: number = SKILL_LIMITS.descriptionMaxChars;
  let lines = skills.map((skill) => line(skill, cap));
  while (lines.join('\n').length > budget && cap > 40) {
    cap = Math.floor(cap * 0.75);
    lines = skills.map((skill) => line(skill, cap));
  }
  return lines.join('\n');
}

/** The answer for a name that is no skill: every skill's name and description. */
async function unknownSkill(skills: SkillsAccess, wanted: string): Promise<ToolError> {
  const all = await skills.list();
  const list =
    all.length === 0
      ? 'There are no skills yet; skill_manage with action create writes one.'
      : `The ${all.length} skill${all.length === 1 ? '' : 's'}:\n${formatSkillList(all)}`;
  return new ToolError('ERR_TOOL_SKILL_NOT_FOUND', `No skill named ${quote(wanted)}. ${list}`);
}

function sizeOf(bytes: number): string {
  return bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(1)} KiB`;
}

/** Makes `read_skill` for a run. */
export function createReadSkillTool(environment: ToolEnvironment): Tool {
  return defineTool(readSkillSchema, async (args) => {
    const skills = environment.ctx.skills;
    if (skills === undefined) throw unavailable();
    const view = await skills.view(args.name);
    if (view === undefined) throw await unknownSkill(skills, args.name);
    const { skill } = view;
    const others = view.files.filter((file) => file.path !== SKILL_FILE);
    const where =
      skills.mountPath === undefined
        ? ''
        : ` In bash they are under ${skills.mountPath}/${skill.name}/ (read-only) as they were when this run started: a skill written since reaches bash in the next run.`;
    const lines = [
      `Skill ${quote(skill.name)} (version ${skill.version}${skill.pinned ? ', pinned: it cannot be changed' : ''}). ${SKILL_FILE}:`,
      '',
      view.skillMd,
      '',
      others.length === 0
        ? 'The skill has no other files.'
        : `Its other files (read them with read_skill_file).${where}\n${others.map((file) => `- ${file.path} (${sizeOf(file.bytes)})`).join('\n')}`,
    ];
    return { ok: true, content: lines.join('\n') };
  });
}

/** Makes `read_skill_file` for a run. */
export function createReadSkillFileTool(environment: ToolEnvironment): Tool {
  return defineTool(readSkillFileSchema, async (args) => {
    const skills = environment.ctx.skills;
    if (skills === undefined) throw unavailable();
    const problem = skillPathProblem(args.path);
    if (problem !== undefined) {
      throw new ToolError('ERR_TOOL_ARGS_INVALID', `The path ${quote(args.path)} ${problem}.`);
    }
    const read = await skills.readFile(args.name, args.path);
    if (read === undefined) throw await unknownSkill(skills, args.name);
    if (read.content === null) throw await missingFile(skills, args.name, args.path);
    const content = read.content;
    if (content.length <= LONG_FILE_CHARS) return { ok: true, content };
    const where =
      skills.mountPath === undefined
        ? ''
        : ` Read it in parts with bash, for example: sed -n '1,200p' ${skills.mountPath}/${args.name}/${args.path}`;
    return {
      ok: true,
      content: `${content}\n\n[${args.path} is ${content.length} characters: the tool result may be cut in the middle.${where}]`,
    };
  });
}

async function missingFile(skills: SkillsAccess, skill: string, path: string): Promise<ToolError> {
  const view = await skills.view(skill);
  const files = view?.files.map((file) => file.path).join(', ') ?? '';
  return new ToolError(
    'ERR_TOOL_SKILL_NOT_FOUND',
    `The skill ${quote(skill)} has no file ${quote(path)}. Its files: ${files}.`,
  );
}

/** Validated arguments of `skill_manage`. */
export type SkillManageArgs = Static<typeof SkillManageParams>;

/** Makes `skill_manage` for a run. */
export function createSkillManageTool(environment: ToolEnvironment): Tool {
  const { limits, locale } = environment;
  return defineTool(skillManageSchema, async (args) => {
    const skills = environment.ctx.skills;
    if (skills === undefined) throw unavailable();
    checkFields(args);
    const nameProblem = skillNameProblem(args.name);
    if (nameProblem !== undefined) {
      throw new ToolError('ERR_TOOL_SKILL_INVALID', `The skill name ${quote(args.name)} ${nameProblem}.`);
    }
    const skill = args.name;
    switch (args.action) {
      case 'create':
      case 'edit': {
        const content = args.content as string;
        const description = checkSkillMd(skill, content);
        const result = await skills.save({
          name: skill,
          mode: args.action === 'create' ? 'create' : 'update',
          set: { [SKILL_FILE]: content },
          description,
          byAgent: true,
        });
        return written(
          skills,
          skill,
          result,
          args.action === 'create' ? 'Created' : `Rewrote ${SKILL_FILE} of`,
        );
      }
      case 'write_file': {
        const path = checkPath(args.file_path as string);
        const content = args.file_content as string;
        const write: SkillWrite =
          path === SKILL_FILE
            ? {
                name: skill,
                mode: 'update',
                set: { [path]: content },
                description: checkSkillMd(skill, content),
              }
            : { name: skill, mode: 'update', set: { [path]: checkFile(path, content) } };
        const result = await skills.save({ ...write, byAgent: true });
        return written(skills, skill, result, `Wrote ${path} (${sizeOf(Buffer.byteLength(content))}) in`);
      }
      case 'remove_file': {
        const path = checkPath(args.file_path as string);
        if (path === SKILL_FILE) {
          throw new ToolError(
            'ERR_TOOL_SKILL_INVALID',
            `${SKILL_FILE} cannot be removed: every skill needs one. Delete the whole skill with action delete instead.`,
          );
        }
        const result = await skills.save({
          name: skill,
          mode: 'update',
          set: {},
          remove: [path],
          byAgent: true,
        });
        return written(skills, skill, result, `Removed ${path} from`);
      }
      case 'patch': {
        const path = checkPath(args.file_path ?? SKILL_FILE);
        const read = await skills.readFile(skill, path);
        if (read === undefined) throw await unknownSkill(skills, skill);
        if (read.content === null) throw await missingFile(skills, skill, path);
        if (read.skill.pinned) throw refusal(skill, { ok: false, refusal: 'pinned' });
        const patched = patchText(
          read.content,
          {
            old_string: args.old_string as string,
            new_string: args.new_string as string,
            replace_all: args.replace_all,
          },
          `${skill}/${path}`,
          locale,
          limits.patchDiffMaxLines,
        );
        if (!patched.changed) return { ok: true, content: patched.report };
        const set = { [path]: path === SKILL_FILE ? patched.content : checkFile(path, patched.content) };
        const description = path === SKILL_FILE ? checkSkillMd(skill, patched.content) : undefined;
        const result = await skills.save({
          name: skill,
          mode: 'update',
          set,
          description,
          ifVersion: read.skill.version,
          byAgent: true,
        });
        if (!result.ok) throw refusal(skill, result);
        return {
          ok: true,
          content: `${patched.report}\nThe skill ${quote(skill)} is now version ${result.skill.version}.`,
        };
      }
      case 'delete': {
        const deleted = await skills.delete(skill);
        if (deleted === 'missing') throw await unknownSkill(skills, skill);
        if (deleted === 'pinned') throw refusal(skill, { ok: false, refusal: 'pinned' });
        return { ok: true, content: `Deleted the skill ${quote(skill)}.` };
      }
    }
  });
}

/** Refuses fields the action does not take and missing ones it needs, saying what the action takes. */
function checkFields(args: SkillManageArgs): void {
  const { required, optional } = ACTION_FIELDS[args.action];
  const given = Object.keys(args).filter((key) => key !== 'action' && key !== 'name');
  const missing = required.filter((field) => !given.includes(field));
  const extra = given.filter((field) => !required.includes(field) && !optional.includes(field));
  if (missing.length === 0 && extra.length === 0) return;
  const takes = [...required, ...optional.map((field) => `${field}?`)];
  const problems = [
    ...(missing.length > 0 ? [`it needs ${missing.join(', ')}`] : []),
    ...(extra.length > 0 ? [`it does not take ${extra.join(', ')}`] : []),
  ];
  throw new ToolError(
    'ERR_TOOL_ARGS_INVALID',
    `skill_manage action ${args.action}: ${problems.join('; ')}. It takes name${takes.length > 0 ? `, ${takes.join(', ')}` : ''}.`,
  );
}

/** Checks a SKILL.md the agent wrote (format, then guard); returns its description. */
function checkSkillMd(skill: string, content: string): string {
  const parsed = parseSkillMd(content, skill);
  if (!parsed.ok) {
    throw new ToolError(
      'ERR_TOOL_SKILL_INVALID',
      `${SKILL_FILE} of ${quote(skill)} was not written:\n${parsed.problems.map((p) => `- ${p}`).join('\n')}`,
    );
  }
  guard(`${skill}/${SKILL_FILE}`, content);
  return parsed.document.frontmatter.description;
}

/** Checks a file other than SKILL.md the agent wrote (size, then guard); returns its content. */
function checkFile(path: string, content: string): string {
  const problem = fileSizeProblem(path, content);
  if (problem !== undefined) throw new ToolError('ERR_TOOL_SKILL_INVALID', problem);
  guard(path, content);
  return content;
}

function checkPath(path: string): string {
  const problem = skillPathProblem(path);
  if (problem !== undefined) {
    throw new ToolError('ERR_TOOL_SKILL_INVALID', `The file path ${quote(path)} ${problem}.`);
  }
  return path;
}

function guard(where: string, content: string): void {
  const verdict = guardContent(content, 'skill');
  if (!verdict.ok) {
    throw new ToolError('ERR_TOOL_SKILL_REFUSED', `${where} was not written. ${verdict.reason}`);
  }
}

async function written(
  skills: SkillsAccess,
  skill: string,
  result: SkillWriteResult,
  what: string,
): Promise<{ ok: true; content: string }> {
  if (!result.ok) {
    if (result.refusal === 'missing') throw await unknownSkill(skills, skill);
    if (result.refusal === 'no_file') throw await missingFile(skills, skill, result.path);
    throw refusal(skill, result);
  }
  const { version, fileCount, bytes } = result.skill;
  return {
    ok: true,
    content: `${what} the skill ${quote(skill)}: version ${version}, ${fileCount} file${fileCount === 1 ? '' : 's'}, ${sizeOf(bytes)}. read_skill and read_skill_file see it now; bash sees it from the next run.`,
  };
}

/** The model's message for a refused write (not `missing` or `no_file`, which list what there is). */
function refusal(skill: string, result: Exclude<SkillWriteResult, { ok: true }>): ToolError {
  switch (result.refusal) {
    case 'exists':
      return new ToolError(
        'ERR_TOOL_SKILL_EXISTS',
        `A skill named ${quote(skill)} exists already. Change it with edit, patch or write_file (read it first with read_skill), or choose another name.`,
      );
    case 'pinned':
      return new ToolError(
        'ERR_TOOL_SKILL_PINNED',
        `The skill ${quote(skill)} is pinned: people manage it, and it cannot be changed or deleted here. Write a skill of another name if you need a variant of it.`,
      );
    case 'changed':
      return new ToolError(
        'ERR_TOOL_SKILL_CHANGED',
        `The skill ${quote(skill)} changed while this patch was made (it is now version ${result.version}); nothing was written. Read it again and patch the current text.`,
      );
    case 'count':
      return new ToolError(
        'ERR_TOOL_SKILL_LIMIT',
        `There are ${result.value} skills, the most allowed (${result.max}); nothing was written. Improve an existing skill instead, or delete one that is no longer useful.`,
      );
    case 'bytes':
      return new ToolError(
        'ERR_TOOL_SKILL_LIMIT',
        `This would make the skills ${result.value} bytes in all, over the limit of ${result.max}; nothing was written. Write less, or delete what is no longer useful.`,
      );
    case 'files':
      return new ToolError(
        'ERR_TOOL_SKILL_LIMIT',
        `This would give ${quote(skill)} ${result.value} files; a skill holds at most ${result.max}, ${SKILL_FILE} included. Nothing was written; merge some files.`,
      );
    case 'clash':
      return new ToolError(
        'ERR_TOOL_SKILL_INVALID',
        `${quote(result.file)} is a file of ${quote(skill)}, so ${quote(result.path)} cannot be inside it (a path cannot be both a file and a folder). Nothing was written; choose another path, or remove ${quote(result.file)} first.`,
      );
    default:
      return new ToolError(
        'ERR_TOOL_SKILL_NOT_FOUND',
        `The skill ${quote(skill)} has nothing there (${result.refusal}).`,
      );
  }
}
