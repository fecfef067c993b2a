import { type Static, Type } from '@sinclair/typebox';
import { EXPECTED } from './expected.js';

/**
 * Limits of the Agent Skills format as Tether applies it; the API, the
 * `skill_manage` tool and docs/tools.md all follow them. The tenant's limits
 * (how many skills, how many bytes) are settings: see {@link SKILL_DEFAULTS}.
 */
export const SKILL_LIMITS = {
  /** `name`: 1 to 64 characters of a-z, 0-9 and `-` (see {@link SKILL_NAME_PATTERN}). */
  nameMaxChars: 64,
  /** `description`: 1 to 1,024 characters, no `<` or `>`. */
  descriptionMaxChars: 1_024,
  /** `compatibility`, when given: 1 to 500 characters. */
  compatibilityMaxChars: 500,
  /** `SKILL.md`, frontmatter included, in characters. */
  skillMdMaxChars: 100_000,
  /** Any other file of a skill, in bytes (UTF-8). */
  fileMaxBytes: 1_048_576,
  /** Files of one skill, `SKILL.md` included. */
  filesMax: 100,
  /** A file's path inside its skill, in characters. */
  pathMaxChars: 1_024,
  /** The body of `PUT /v1/skills/:name`, in bytes (above the API's general body limit). */
  bodyMaxBytes: 8 * 1_048_576,
} as const;

/** The tenant's limits unless configured otherwise (`TETHER_SKILLS_MAX_COUNT`, `TETHER_SKILLS_MAX_BYTES`, `TETHER_SKILLS_PROMPT_CHARS`). */
export const SKILL_DEFAULTS = {
  maxCount: 200,
  /** 50 MiB: every file of every skill of the tenant, in bytes. */
  maxBytes: 50 * 1_048_576,
  /** The skills index in a run's system prompt, in characters. */
  promptChars: 4_000,
} as const;

/** A skill's name: lowercase letters, digits and single hyphens inside, 1 to 64 characters. */
export const SKILL_NAME_PATTERN = '^[a-z0-9]+(-[a-z0-9]+)*$';
export const SkillNameSchema = Type.String({
  minLength: 1,
  maxLength: SKILL_LIMITS.nameMaxChars,
  pattern: SKILL_NAME_PATTERN,
  [EXPECTED]: 'a skill name of a-z, 0-9 and single hyphens inside (as pdf-tools)',
  description: 'The skill name: 1 to 64 characters of a-z, 0-9 and -, no leading, trailing or doubled hyphen',
});

/** A skill as listed: its frontmatter's name and description, and what Tether keeps of it. */
export const SkillSummarySchema = Type.Object({
  name: SkillNameSchema,
  description: Type.String(),
  /** Set through the API: the agent cannot change or delete a pinned skill. */
  pinned: Type.Boolean(),
  /** Changes with every write of the skill (the tenant's version counter at that write). */
  version: Type.Integer({ minimum: 1 }),
  /** Every file of the skill, in bytes (UTF-8). */
  bytes: Type.Integer({ minimum: 0 }),
  /** How many files, `SKILL.md` included. */
  fileCount: Type.Integer({ minimum: 1 }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type SkillSummary = Static<typeof SkillSummarySchema>;

/** `GET /v1/skills`: every skill of the tenant, by name, and the tenant's totals and limits. */
export const SkillListSchema = Type.Object({
  data: Type.Array(SkillSummarySchema),
  count: Type.Integer({ minimum: 0 }),
  bytes: Type.Integer({ minimum: 0 }),
  maxCount: Type.Integer({ minimum: 1 }),
  maxBytes: Type.Integer({ minimum: 1 }),
});
export type SkillList = Static<typeof SkillListSchema>;

/** A skill's files: path inside the skill → UTF-8 content; `SKILL.md` is required. */
export const SkillFilesSchema = Type.Record(Type.String(), Type.String(), {
  minProperties: 1,
  maxProperties: SKILL_LIMITS.filesMax,
  propertyNames: { minLength: 1, maxLength: SKILL_LIMITS.pathMaxChars },
  description: 'Path inside the skill → UTF-8 content. SKILL.md is required.',
});

/** `GET /v1/skills/:name`: the skill and every file of it. */
export const SkillSchema = Type.Intersect([SkillSummarySchema, Type.Object({ files: SkillFilesSchema })]);
export type Skill = Static<typeof SkillSchema>;

/** `PUT /v1/skills/:name` body: the whole skill (it replaces every file), and whether it is pinned. */
export const PutSkillBodySchema = Type.Object(
  {
    files: SkillFilesSchema,
    /** Omitted: a new skill is not pinned, an existing one keeps its setting. */
    pinned: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type PutSkillBody = Static<typeof PutSkillBodySchema>;

/**
 * A write of a skill, as the store takes it from the API (`PUT`) and the
 * agent (`skill_manage`), once the format is checked.
 */
export interface SkillWrite {
  name: string;
  /**
   * `create`: refused when the skill exists; `replace`: every file, the skill
   * created or not; `update`: only the files in `set` and `remove`, and the
   * skill must exist.
   */
  mode: 'create' | 'replace' | 'update';
  /** Files written: path → content. */
  set: Readonly<Record<string, string>>;
  /** Paths removed (`update`). */
  remove?: readonly string[] | undefined;
  /** The description of the `SKILL.md` in `set`; required when `set` holds one. */
  description?: string | undefined;
  /** The agent writes: a pinned skill is refused. */
  byAgent?: boolean | undefined;
  /** Pin or unpin (the API); left out, a skill keeps its setting (a new one is not pinned). */
  pinned?: boolean | undefined;
  /** The skill's version the writer read and changed: refused (`changed`) if it has changed since. */
  ifVersion?: number | undefined;
}

/** What became of a {@link SkillWrite}: written, or refused with nothing changed. */
export type SkillWriteResult =
  | { ok: true; skill: SkillSummary; created: boolean }
  | { ok: false; refusal: 'exists' | 'missing' | 'pinned' }
  | { ok: false; refusal: 'changed'; version: number }
  /** A limit: skills of the tenant, bytes of the tenant, files of the skill (`value`: what it would be). */
  | { ok: false; refusal: 'count' | 'bytes' | 'files'; value: number; max: number }
  | { ok: false; refusal: 'no_file'; path: string }
  /** An update would make `file` a folder of `path`'s (or the other way round): refused, as the format refuses it. */
  | { ok: false; refusal: 'clash'; file: string; path: string };

/** What `read_skill` shows of a skill: its summary, its `SKILL.md`, and every file's path and size. */
export interface SkillView {
  skill: SkillSummary;
  skillMd: string;
  files: { path: string; bytes: number }[];
}
