/**
 * The system prompt, assembled from the tools a run actually has (design
 * document, section 6).
 *
 * Invariant: the prompt never names a tool the run does not have. A crew
 * sub-agent without `clarify` is never told to ask the user; a run without
 * `write_file` is never told to rewrite files with it. Where the design's text
 * names two tools in one line (the `patch` scenario and behaviour block, the
 * "read before you edit" check), the line is adapted or left out when one of
 * them is missing.
 *
 * Order: identity, a crew child's delegated task, workspace, tool-use rules,
 * behaviour blocks (todo, patch, clarify, delegate_task, delegate_parallel,
 * escalate, memory_save, memory_recall, read_skill, skill_manage), the memory
 * scope's recent entries (fenced as data), then the caller's instructions. A
 * run with read_skill gets the skills index after the workspace.
 *
 * The crew tools' lines and blocks follow the design's style; the zh text of
 * todo, patch and clarify stays the design's verbatim.
 */
import type { Locale } from '@tether/protocol';
import { en } from './packs/en.js';
import type { PromptPack } from './packs/prompt-pack.js';
import { zh } from './packs/zh.js';

/** The prompt packs by locale. */
export const PROMPT_PACKS: Readonly<Record<Locale, PromptPack>> = { zh, en };

/** The tools that have a behaviour block, in the order the prompt lists them. */
export const BEHAVIOR_TOOLS = [
  'todo',
  'patch',
  'clarify',
  'delegate_task',
  'delegate_parallel',
  'escalate',
  'memory_save',
  'memory_recall',
  'read_skill',
  'skill_manage',
] as const;
export type BehaviorTool = (typeof BEHAVIOR_TOOLS)[number];

/**
 * The behaviour blocks per locale: the design's 6.2 as written, and the crew
 * tools' in its style. `buildSystemPrompt`
 * includes a block only when its tool is present, and swaps the patch block
 * for one that does not name `write_file` when the run lacks it (see
 * {@link getToolBehaviors}).
 */
export const TOOL_BEHAVIOR_BY_LOCALE: Readonly<Record<Locale, Readonly<Record<BehaviorTool, string>>>> = {
  zh: zh.behavior,
  en: en.behavior,
};

/**
 * The design's `TOOL_BEHAVIOR` (6.2): the behaviour notes of todo, patch and
 * clarify in its words, and the crew tools' (zh).
 */
export const TOOL_BEHAVIOR: Readonly<Record<BehaviorTool, string>> = zh.behavior;

/**
 * The tool-use section (design 6.1), generated from the tools present.
 *
 * Returns an empty string for a run with no tools at all: the design's rules
 * ("act through tools") would be a lie there. With tools but none that has a
 * scenario, only the rules are returned, as in the design.
 */
export function getToolUseEnforcement(toolNames: readonly string[], locale: Locale = 'zh'): string {
  if (toolNames.length === 0) return '';
  const has = new Set(toolNames);
  const { toolUse } = PROMPT_PACKS[locale];
  const { scenarios } = toolUse;

  const lines: string[] = [];
  if (has.has('read_file')) lines.push(scenarios.read_file);
  if (has.has('patch')) lines.push(has.has('write_file') ? scenarios.patchAndWriteFile : scenarios.patch);
  else if (has.has('write_file')) lines.push(scenarios.write_file);
  if (has.has('list_dir')) lines.push(scenarios.list_dir);
  if (has.has('bash')) lines.push(scenarios.bash);
  if (has.has('clarify')) lines.push(scenarios.clarify);
  if (has.has('todo')) lines.push(scenarios.todo);
  for (const tool of ['read_skill', 'read_skill_file', 'skill_manage'] as const) {
    if (has.has(tool)) lines.push(scenarios[tool]);
  }
  for (const tool of ['delegate_task', 'delegate_parallel', 'escalate'] as const) {
    if (has.has(tool)) lines.push(scenarios[tool]);
  }
  for (const tool of ['memory_save', 'memory_recall'] as const) {
    if (has.has(tool)) lines.push(scenarios[tool]);
  }
  if (lines.length === 0) return toolUse.rules;

  const checks: string[] = [];
  if (has.has('read_file') && (has.has('patch') || has.has('write_file'))) {
    checks.push(toolUse.checks.readBeforeEdit);
  }
  if (has.has('bash')) checks.push(toolUse.checks.workdirBeforeCommand);

  const sections = [toolUse.rules, `${toolUse.scenariosHeading}\n${bullets(lines)}`];
  if (checks.length > 0) sections.push(`${toolUse.checksHeading}\n${bullets(checks)}`);
  return sections.join('\n\n');
}

/** The behaviour blocks (design 6.2) for the tools present, in prompt order. */
export function getToolBehaviors(toolNames: readonly string[], locale: Locale): string[] {
  const has = new Set(toolNames);
  const pack = PROMPT_PACKS[locale];
  return BEHAVIOR_TOOLS.filter((tool) => has.has(tool)).map((tool) =>
    tool === 'patch' && !has.has('write_file') ? pack.patchBehaviorWithoutWriteFile : pack.behavior[tool],
  );
}

export interface SystemPromptOptions {
  /** The names of the tools the run has (what the model will be offered). */
  toolNames: readonly string[];
  locale: Locale;
  /** The workspace path the tools resolve against; omitted, no workspace section. */
  workspace?: string | undefined;
  /** The caller's own instructions, appended last under their own heading. */
  instructions?: string | undefined;
  /**
   * A crew child: the goal delegated to it and the context that came with it.
   * The prompt then frames the run as a sub-agent (see {@link crewSection}).
   */
  crew?: { goal: string; context?: string | undefined } | undefined;
  /**
   * The run's memory scope at its start: its most recent entries (newest
   * first, already fitted to the prompt's budget), whether the last was cut,
   * and how many older ones were left out. Shown fenced as data, after the
   * behaviour blocks; nothing when there are no entries.
   */
  memory?: MemoryPromptBlock | undefined;
  /**
   * The tenant's skills, listed (`name: description`) when the run has
   * read_skill: see {@link skillsSection}.
   */
  skills?: SkillsIndex | undefined;
}

/** What `buildSystemPrompt` shows of a memory scope. */
export interface MemoryPromptBlock {
  entries: readonly { id: string; content: string; tags: readonly string[]; date: string }[];
  /** The last entry was cut to fit. */
  cut?: boolean | undefined;
  /** Older entries left out. */
  more?: number | undefined;
}

/** The skills index of a system prompt. */
export interface SkillsIndex {
  /** The tenant's skills, in the order to list them. */
  entries: readonly { name: string; description: string }[];
  /** The most characters the list may take (`TETHER_SKILLS_PROMPT_CHARS`); the rest is counted, not listed. */
  maxChars: number;
  /** Where bash finds the skills' files, read-only (`/run/skills` under bwrap), when it does. */
  mountPath?: string | undefined;
}

/**
 * The whole system prompt: identity line, a crew child's delegated task,
 * workspace, tool-use rules, the behaviour blocks of the tools present, then
 * the caller's instructions.
 */
export function buildSystemPrompt(options: SystemPromptOptions): string {
  return composeSystemPrompt(options).text;
}

/**
 * The system prompt (see {@link buildSystemPrompt}) and where in it the part that depends on the
 * tool names and the locale alone is: the tool-use rules and the behaviour blocks, most of the
 * prompt, the same for every run with the same tools. A checkpoint stores that part once for all
 * of them, by its hash (see `SharedPrompt` in checkpoint.ts). `shared` is absent when the run has
 * no tools.
 */
export function composeSystemPrompt(options: SystemPromptOptions): {
  text: string;
  shared?: { at: number; text: string } | undefined;
} {
  const pack = PROMPT_PACKS[options.locale];
  const before = options.crew
    ? [pack.crew.identity, crewSection(options.crew, options.toolNames, options.locale)]
    : [pack.identity];
  if (options.workspace) before.push(pack.workspace(options.workspace));
  if (options.skills && options.toolNames.includes('read_skill')) {
    before.push(skillsSection(options.skills, options.toolNames, options.locale));
  }
  const enforcement = getToolUseEnforcement(options.toolNames, options.locale);
  const shared = [
    ...(enforcement ? [enforcement] : []),
    ...getToolBehaviors(options.toolNames, options.locale),
  ];
  const after: string[] = [];
  if (options.memory && options.memory.entries.length > 0) {
    after.push(memorySection(options.memory, options.toolNames, options.locale));
  }
  const instructions = options.instructions?.trim();
  if (instructions) after.push(`${pack.instructionsHeading}\n${instructions}`);
  const text = [...before, ...shared, ...after].join('\n\n');
  if (shared.length === 0) return { text };
  // `before` is never empty (the identity line comes first).
  return { text, shared: { at: before.join('\n\n').length + 2, text: shared.join('\n\n') } };
}

/**
 * A crew child's framing: it is a sub-agent on a delegated goal in a shared
 * workspace, with no user to ask (and `escalate` when it has the tool), that
 * must end with a summary; then the goal, and the context fenced as data (the
 * fence longer than any run of backticks in it, so it cannot be closed from
 * inside).
 */
export function crewSection(
  crew: { goal: string; context?: string | undefined },
  toolNames: readonly string[],
  locale: Locale,
): string {
  const { crew: text } = PROMPT_PACKS[locale];
  const rules = [text.rules.subAgent, text.rules.sharedWorkspace, text.rules.noUser];
  if (toolNames.includes('escalate')) rules.push(text.rules.escalate);
  rules.push(text.rules.summary);
  const sections = [`${text.heading}\n${bullets(rules)}`, `${text.goalHeading}\n${crew.goal.trim()}`];
  // Only the end is trimmed: the first line's indentation may matter (code).
  const context = crew.context?.trimEnd().replace(/^\n+/, '');
  if (context?.trim()) {
    const longest = Math.max(0, ...(context.match(/`+/g) ?? []).map((run) => run.length));
    const fence = '`'.repeat(Math.max(3, longest + 1));
    sections.push(`${text.contextHeading}\n${text.contextNote}\n${fence}\n${context}\n${fence}`);
  }
  return sections.join('\n\n');
}

/**
 * The memory block: a heading, a note that says the entries are data saved
 * by earlier runs and not instructions, the entries (`[id] date (tags)` then
 * the content) in one fence longer than any run of backticks inside (so no
 * entry can close it), and what was cut or left out.
 */
export function memorySection(
  memory: MemoryPromptBlock,
  toolNames: readonly string[],
  locale: Locale,
): string {
  const { memory: text } = PROMPT_PACKS[locale];
  const body = memory.entries
    .map((entry) => {
      const tags = entry.tags.length > 0 ? ` (${entry.tags.join(', ')})` : '';
      return `[${entry.id}] ${entry.date.slice(0, 10)}${tags}\n${entry.content.trim()}`;
    })
    .join('\n\n');
  const longest = Math.max(0, ...(body.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  const lines = [text.heading, text.note, fence, body, fence];
  if (memory.cut) lines.push(text.cut);
  const more = memory.more ?? 0;
  if (more > 0)
    lines.push(toolNames.includes('memory_recall') ? text.more(more) : text.moreWithoutRecall(more));
  return lines.join('\n');
}

/**
 * The skills index (progressive disclosure): load a matching skill with
 * read_skill before acting; where bash finds their files (with bash only);
 * then `name: description` per skill, fenced as data, as many as fit in
 * `maxChars`, and how many more there are and how to list them.
 */
export function skillsSection(skills: SkillsIndex, toolNames: readonly string[], locale: Locale): string {
  const { skills: text } = PROMPT_PACKS[locale];
  const head = [text.intro];
  if (skills.mountPath && toolNames.includes('bash')) head.push(text.mount(skills.mountPath));
  if (skills.entries.length === 0) return `${text.heading}\n${head.join('\n')}\n${text.none}`;
  const lines: string[] = [];
  let used = 0;
  for (const entry of skills.entries) {
    const line = `- ${entry.name}: ${entry.description.replace(/\s+/g, ' ').trim()}`;
    if (used + line.length + 1 > skills.maxChars) break;
    lines.push(line);
    used += line.length + 1;
  }
  const list = lines.join('\n');
  const longest = Math.max(0, ...(list.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  const sections = [`${text.heading}\n${head.join('\n')}`];
  if (lines.length > 0) sections.push(`${text.dataNote}\n${fence}\n${list}\n${fence}`);
  const more = skills.entries.length - lines.length;
  if (more > 0) sections.push(text.more(more));
  return sections.join('\n');
}

/**
 * The tool result clarify gets when the user did not answer before the
 * deadline (design 5.3): the model is told to decide for itself and continue.
 */
export function clarifyTimeoutMessage(locale: Locale): string {
  return PROMPT_PACKS[locale].clarifyTimeout;
}

/**
 * The tool result clarify gets when the host's `onClarifyRequest` failed
 * (rejected, threw, or gave no text): the reason, then the timeout's advice to
 * decide and continue, so the run goes on.
 */
export function clarifyFailedMessage(locale: Locale, reason: string): string {
  return PROMPT_PACKS[locale].clarifyFailed(reason);
}

/** The tool result (an error) of a client tool call that got no output before its deadline. */
export function toolTimeoutMessage(locale: Locale, name: string): string {
  return PROMPT_PACKS[locale].toolTimeout(name);
}

/** The tool result of a call a reviewer refused. */
export function approvalRejectedMessage(locale: Locale, name: string, message: string | undefined): string {
  return PROMPT_PACKS[locale].approvalRejected(name, message);
}

/** The tool result of a call that got no decision before its deadline (and `onTimeout` was `reject`). */
export function approvalTimedOutMessage(locale: Locale, name: string): string {
  return PROMPT_PACKS[locale].approvalTimedOut(name);
}

/** The note before the result of a call that ran with a reviewer's arguments. */
export function approvalEditedNote(locale: Locale, args: string): string {
  return PROMPT_PACKS[locale].approvalEdited(args);
}

/**
 * The tool result `escalate` gets in the transcript: the run ends there, and
 * its reason (the run's output) goes to the run that delegated it.
 */
export function escalatedToolResult(locale: Locale): string {
  return PROMPT_PACKS[locale].escalated;
}

/** The tool result of an accepted `submit_result` call: the run ends there. */
export function resultAcceptedMessage(locale: Locale): string {
  return PROMPT_PACKS[locale].result.accepted;
}

/** The result of a call of the turn left unrun: the run ended at `submit_result` before it. */
export function resultNotRunMessage(locale: Locale, name: string): string {
  return PROMPT_PACKS[locale].result.notRun(name);
}

/** What the model is told, as the user, after a final answer in plain text in a run with `output`. */
export function resultRequiredMessage(locale: Locale, tool: string): string {
  return PROMPT_PACKS[locale].result.required(tool);
}

function bullets(lines: readonly string[]): string {
  return lines.map((line) => `- ${line}`).join('\n');
}
