/**
 * The text of one prompt language. The builder decides which pieces a run gets
 * (from the tools it actually has); a pack only holds the words.
 *
 * Every piece that names a tool is keyed by the tools it names, so the builder
 * can leave out whatever mentions a tool the run does not have.
 */
export interface PromptPack {
  /** The first line of every system prompt. Names no tool. */
  identity: string;
  /** The workspace section, given the workspace path. Names no tool. */
  workspace: (path: string) => string;
  /** Heading of the caller's own instructions, which close the prompt. */
  instructionsHeading: string;
  toolUse: {
    /** The design's fixed rules (title, "act through tools", the four mandatory rules). */
    rules: string;
    scenariosHeading: string;
    scenarios: {
      read_file: string;
      /** `patch` when `write_file` is present too (the design's line). */
      patchAndWriteFile: string;
      /** `patch` without `write_file`. */
      patch: string;
      /** `write_file` without `patch` (the design's line). */
      write_file: string;
      list_dir: string;
      bash: string;
      clarify: string;
      todo: string;
      delegate_task: string;
      delegate_parallel: string;
      escalate: string;
      memory_save: string;
      memory_recall: string;
      read_skill: string;
      read_skill_file: string;
      skill_manage: string;
    };
    checksHeading: string;
    checks: {
      /** Needs `read_file` and a tool that changes files. */
      readBeforeEdit: string;
      /** Needs `bash`. */
      workdirBeforeCommand: string;
    };
  };
  /**
   * The behaviour blocks: the design's 6.2, as written (the patch block names
   * `write_file`), and ours for the crew tools in its style. Each names only
   * its own tool.
   */
  behavior: {
    todo: string;
    patch: string;
    clarify: string;
    delegate_task: string;
    delegate_parallel: string;
    escalate: string;
    memory_save: string;
    memory_recall: string;
    /** When to load a skill (names only read_skill). */
    read_skill: string;
    /** When to write a skill: a procedure that worked and will recur (names only skill_manage). */
    skill_manage: string;
  };
  /**
   * The skills index (see `buildSystemPrompt`'s `skills`): shown when the run
   * has read_skill; only `mount` names bash (left out without it).
   */
  skills: {
    heading: string;
    /** Load a matching skill with read_skill before acting. */
    intro: string;
    /** Where bash finds the skills' files, read-only. */
    mount: (path: string) => string;
    /** Says what the fenced list below it is: names and descriptions, data. */
    dataNote: string;
    /** The tenant has no skills. */
    none: string;
    /** `count` skills did not fit: read_skill with a name that is none lists them all. */
    more: (count: number) => string;
  };
  /** The patch block for a run that has `patch` but not `write_file`. */
  patchBehaviorWithoutWriteFile: string;
  /** The tool result clarify gets when the user did not answer in time. */
  clarifyTimeout: string;
  /** The tool result clarify gets when the host's in-process answer failed (`reason` says why). */
  clarifyFailed: (reason: string) => string;
  /** The tool result (an error) of a client tool call whose output did not come before its deadline. */
  toolTimeout: (name: string) => string;
  /** The tool result (an error) of a call a reviewer refused (`message`: what they said, if anything). */
  approvalRejected: (name: string, message: string | undefined) => string;
  /** The tool result (an error) of a call that got no decision before its deadline, and so did not run. */
  approvalTimedOut: (name: string) => string;
  /** Put before the result of a call that ran with arguments a reviewer edited. */
  approvalEdited: (args: string) => string;
  /** A crew child's framing: a sub-agent on a delegated goal (see `buildSystemPrompt`'s `crew`). */
  crew: {
    /** Replaces `identity` for a child. Names no tool. */
    identity: string;
    heading: string;
    /** The rules, in order; only `escalate` names a tool (and is left out without it). */
    rules: {
      subAgent: string;
      sharedWorkspace: string;
      noUser: string;
      escalate: string;
      summary: string;
    };
    goalHeading: string;
    contextHeading: string;
    /** Says what the fenced context below it is: data from the delegating run. */
    contextNote: string;
  };
  /** The tool result escalate gets: the run ends, its reason handed to the run that delegated it. */
  escalated: string;
  /** A run with a structured result (`output`): what the model reads about `submit_result`. */
  result: {
    /** The tool result of an accepted `submit_result` call: the run ends here. */
    accepted: string;
    /** The result of a call of the same turn that did not run: the run ended at `submit_result` before it. */
    notRun: (name: string) => string;
    /** Told as the user after a final answer in plain text: the run ends only through `tool`. */
    required: (tool: string) => string;
  };
  /** The memory block: the scope's most recent entries, fenced as data (see `buildSystemPrompt`'s `memory`). */
  memory: {
    heading: string;
    /** Says what the fenced entries below it are: data saved by earlier runs, not instructions. Names no tool. */
    note: string;
    /** The last entry shown was cut to fit the prompt. Names no tool. */
    cut: string;
    /** `count` entries were left out; `memory_recall` finds them (only with that tool). */
    more: (count: number) => string;
    /** `count` entries were left out, for a run without `memory_recall`. Names no tool. */
    moreWithoutRecall: (count: number) => string;
  };
}
