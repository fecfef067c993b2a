/**
 * The Agent Skills format, as Tether accepts it (docs/tools.md, "Skills").
 *
 * A skill is a folder: `SKILL.md` (YAML frontmatter between `---` lines, then
 * a Markdown body), and any other files inside it, by convention under
 * `references/`, `scripts/`, `templates/` and `assets/`. The checks, in order:
 * the files (how many, their paths, their sizes), then `SKILL.md` (its size,
 * the frontmatter's fences, its YAML, its keys and their values, the body).
 * Every problem is reported, each naming the file, the key or the bound, so
 * one answer says everything to fix. Pure: no I/O. The API's `PUT
 * /v1/skills/:name` and the `skill_manage` tool both check with it.
 */
import { SKILL_LIMITS } from '@tether/protocol';
import { isMap, parseDocument } from 'yaml';
import { confinePath } from '../confine-path.js';

/** The file every skill has. */
export const SKILL_FILE = 'SKILL.md';

/** The frontmatter keys a skill may have; any other is refused, named. */
export const SKILL_KEYS = [
  'name',
  'description',
  'license',
  'compatibility',
  'metadata',
  'allowed-tools',
] as const;

/** A `SKILL.md`'s frontmatter, checked. */
export interface SkillFrontmatter {
  name: string;
  description: string;
  license?: string;
  compatibility?: string;
  metadata?: Record<string, string>;
  'allowed-tools'?: string;
}

/** A `SKILL.md`, checked: its frontmatter and its body (the Markdown after the closing `---`). */
export interface SkillDocument {
  frontmatter: SkillFrontmatter;
  body: string;
}

/** The outcome of a check: what was found, or every problem. */
export type Checked<T> = ({ ok: true } & T) | { ok: false; problems: string[] };

/**
 * Why `name` is not a valid skill name, or undefined: 1 to 64 characters of
 * a-z, 0-9 and `-`, with no hyphen first, last or doubled.
 */
export function skillNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'is empty';
  if (name.length > SKILL_LIMITS.nameMaxChars) {
    return `is ${name.length} characters; at most ${SKILL_LIMITS.nameMaxChars}`;
  }
  if (!/^[a-z0-9-]+$/.test(name)) return 'may hold only lowercase letters a-z, digits and hyphens';
  if (name.startsWith('-') || name.endsWith('-')) return 'must not start or end with a hyphen';
  if (name.includes('--')) return 'must not hold two hyphens in a row';
  return undefined;
}

/**
 * Why `path` cannot name a file of a skill, or undefined: it must be relative,
 * stay inside the skill, be written the one way it is stored (names separated
 * by single `/`, no `.` or `..`, no trailing `/`), and hold no backslash or
 * control character.
 */
export function skillPathProblem(path: string): string | undefined {
  if (path.length > SKILL_LIMITS.pathMaxChars) {
    return `is ${path.length} characters; at most ${SKILL_LIMITS.pathMaxChars}`;
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'holds a control character';
  if (path.includes('\\')) return 'holds a backslash; separate names with /';
  const confined = confinePath(path, { file: true });
  if (!confined.ok) {
    return confined.refusal === 'absolute'
      ? 'is absolute; give a path relative to the skill folder'
      : confined.refusal === 'outside'
        ? 'leads outside the skill folder'
        : confined.problem;
  }
  if (confined.relative !== path)
    return `is not in its plain form; write it as ${JSON.stringify(confined.relative)}`;
  return undefined;
}

/**
 * Checks a whole skill: `files` (path → content) under the folder `name`.
 * Returns the parsed `SKILL.md` and the skill's size in bytes, or every
 * problem found.
 */
export function checkSkill(
  name: string,
  files: Readonly<Record<string, string>>,
): Checked<{ document: SkillDocument; bytes: number }> {
  const problems: string[] = [];
  const folder = skillNameProblem(name);
  if (folder !== undefined) problems.push(`The skill name ${JSON.stringify(name)} ${folder}.`);
  const paths = Object.keys(files);
  if (paths.length > SKILL_LIMITS.filesMax) {
    problems.push(
      `The skill has ${paths.length} files; at most ${SKILL_LIMITS.filesMax}, SKILL.md included.`,
    );
  }
  let bytes = 0;
  for (const path of paths) {
    const content = files[path] as string;
    const size = Buffer.byteLength(content, 'utf8');
    bytes += size;
    const problem = skillPathProblem(path);
    if (problem !== undefined) {
      problems.push(`The path ${JSON.stringify(path)} ${problem}.`);
      continue;
    }
    if (path !== SKILL_FILE) {
      const sized = fileSizeProblem(path, content);
      if (sized !== undefined) problems.push(sized);
    }
  }
  problems.push(...pathClashes(paths));
  const skillMd = files[SKILL_FILE];
  if (skillMd === undefined) {
    problems.push(
      `The skill has no ${SKILL_FILE}; every skill needs one (YAML frontmatter, then the instructions).`,
    );
    return { ok: false, problems };
  }
  const document = parseSkillMd(skillMd, folder === undefined ? name : undefined);
  if (!document.ok) problems.push(...document.problems);
  if (problems.length > 0 || !document.ok) return { ok: false, problems };
  return { ok: true, document: document.document, bytes };
}

/** Why a file other than `SKILL.md` is too large, or undefined. */
export function fileSizeProblem(path: string, content: string): string | undefined {
  const size = Buffer.byteLength(content, 'utf8');
  return size > SKILL_LIMITS.fileMaxBytes
    ? `${path} is ${size} bytes; a skill's file holds at most ${SKILL_LIMITS.fileMaxBytes} bytes (1 MiB).`
    : undefined;
}

/** Paths where one names a file that another needs as a folder (`scripts` and `scripts/run.sh`). */
function pathClashes(paths: readonly string[]): string[] {
  const all = new Set(paths);
  const problems: string[] = [];
  for (const path of paths) {
    const names = path.split('/');
    for (let i = 1; i < names.length; i++) {
      const folder = names.slice(0, i).join('/');
      if (all.has(folder)) {
        problems.push(`${JSON.stringify(folder)} is a file, so ${JSON.stringify(path)} cannot be inside it.`);
        break;
      }
    }
  }
  return problems;
}

const FENCE = /^---[ \t]*$/;

/**
 * Checks a `SKILL.md`: at most 100,000 characters; frontmatter between a
 * first line `---` and the next `---` line, a YAML mapping of the keys of
 * {@link SKILL_KEYS} only (`name` and `description` required, `name` equal
 * to `folder` when given); then a body that is not blank.
 */
export function parseSkillMd(text: string, folder?: string): Checked<{ document: SkillDocument }> {
  const problems: string[] = [];
  if (text.length > SKILL_LIMITS.skillMdMaxChars) {
    problems.push(`${SKILL_FILE} is ${text.length} characters; at most ${SKILL_LIMITS.skillMdMaxChars}.`);
    return { ok: false, problems };
  }
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  if (!FENCE.test(lines[0] ?? '')) {
    problems.push(
      `${SKILL_FILE} must start with YAML frontmatter: a first line ---, the keys (name, description, …), then a line ---.`,
    );
    return { ok: false, problems };
  }
  const close = lines.findIndex((line, index) => index > 0 && FENCE.test(line));
  if (close === -1) {
    problems.push(`${SKILL_FILE}'s frontmatter has no closing --- line.`);
    return { ok: false, problems };
  }
  const yaml = lines.slice(1, close).join('\n');
  const body = lines.slice(close + 1).join('\n');
  const frontmatter = checkFrontmatter(yaml, folder, problems);
  if (body.trim() === '') {
    problems.push(
      `${SKILL_FILE} has no body: after the frontmatter, write the instructions the skill gives.`,
    );
  }
  if (problems.length > 0 || frontmatter === undefined) return { ok: false, problems };
  return { ok: true, document: { frontmatter, body } };
}

function checkFrontmatter(
  yaml: string,
  folder: string | undefined,
  problems: string[],
): SkillFrontmatter | undefined {
  const document = parseDocument(yaml, { uniqueKeys: true, prettyErrors: false });
  const error = document.errors[0];
  if (error !== undefined) {
    problems.push(`${SKILL_FILE}'s frontmatter is not valid YAML: ${error.message.split('\n')[0]}`);
    return undefined;
  }
  const contents = document.contents;
  if (!isMap(contents)) {
    problems.push(`${SKILL_FILE}'s frontmatter must be YAML keys and values (name: …, description: …).`);
    return undefined;
  }
  const before = problems.length;
  let data: object;
  try {
    // No aliases: a frontmatter needs none, and they can expand exponentially.
    data = document.toJS({ maxAliasCount: 0 }) as object;
  } catch {
    problems.push(`${SKILL_FILE}'s frontmatter uses YAML aliases (*name); write the values out.`);
    return undefined;
  }
  const values = new Map<string, unknown>(Object.entries(data));
  for (const key of values.keys()) {
    if (!(SKILL_KEYS as readonly string[]).includes(key)) {
      problems.push(
        `${SKILL_FILE}'s frontmatter key ${JSON.stringify(key)} is not allowed; the keys are ${SKILL_KEYS.join(', ')} (put other fields under metadata).`,
      );
    }
  }
  const text = (key: string, required: boolean): string | undefined => {
    const value = values.get(key);
    if (value === undefined || value === null) {
      if (required) problems.push(`${SKILL_FILE}'s frontmatter needs ${key}.`);
      return undefined;
    }
    if (typeof value !== 'string') {
      problems.push(`${SKILL_FILE}'s ${key} must be text (got ${describe(value)}).`);
      return undefined;
    }
    if (value.trim() === '') {
      problems.push(`${SKILL_FILE}'s ${key} is empty.`);
      return undefined;
    }
    return value;
  };

  const name = text('name', true);
  if (name !== undefined) {
    const problem = skillNameProblem(name);
    if (problem !== undefined) problems.push(`${SKILL_FILE}'s name ${JSON.stringify(name)} ${problem}.`);
    else if (folder !== undefined && name !== folder) {
      problems.push(
        `${SKILL_FILE}'s name ${JSON.stringify(name)} must be the skill's folder name, ${JSON.stringify(folder)}.`,
      );
    }
  }
  const description = text('description', true);
  if (description !== undefined) {
    if (description.length > SKILL_LIMITS.descriptionMaxChars) {
      problems.push(
        `${SKILL_FILE}'s description is ${description.length} characters; at most ${SKILL_LIMITS.descriptionMaxChars}.`,
      );
    }
    if (/[<>]/.test(description)) problems.push(`${SKILL_FILE}'s description must not hold < or >.`);
  }
  const license = text('license', false);
  const compatibility = text('compatibility', false);
  if (compatibility !== undefined && compatibility.length > SKILL_LIMITS.compatibilityMaxChars) {
    problems.push(
      `${SKILL_FILE}'s compatibility is ${compatibility.length} characters; at most ${SKILL_LIMITS.compatibilityMaxChars}.`,
    );
  }
  const allowedTools = text('allowed-tools', false);
  const metadata = checkMetadata(values.get('metadata'), problems);
  if (problems.length > before || name === undefined || description === undefined) return undefined;
  return {
    name,
    description,
    ...(license === undefined ? {} : { license }),
    ...(compatibility === undefined ? {} : { compatibility }),
    ...(metadata === undefined ? {} : { metadata }),
    ...(allowedTools === undefined ? {} : { 'allowed-tools': allowedTools }),
  };
}

/** `metadata`: a mapping of text keys to text values. */
function checkMetadata(value: unknown, problems: string[]): Record<string, string> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push(`${SKILL_FILE}'s metadata must be keys and text values (got ${describe(value)}).`);
    return undefined;
  }
  const metadata: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string') {
      problems.push(`${SKILL_FILE}'s metadata.${key} must be text (got ${describe(item)}); quote it.`);
      continue;
    }
    metadata[key] = item;
  }
  return metadata;
}

function describe(value: unknown): string {
  if (value === null) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'keys and values';
  return `${typeof value} ${JSON.stringify(value)}`;
}
