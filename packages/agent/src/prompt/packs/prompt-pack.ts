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
    };
    checksHeading: string;
    checks: {
      /** Needs `read_file` and a tool that changes files. */
      readBeforeEdit: string;
      /** Needs `bash`. */
      workdirBeforeCommand: string;
    };
  };
  /** The design's 6.2 behaviour blocks, as written (the patch block names `write_file`). */
  behavior: {
    todo: string;
    patch: string;
    clarify: string;
  };
  /** The patch block for a run that has `patch` but not `write_file`. */
  patchBehaviorWithoutWriteFile: string;
  /** The tool result clarify gets when the user did not answer in time. */
  clarifyTimeout: string;
  /** The tool result clarify gets when the host's in-process answer failed (`reason` says why). */
  clarifyFailed: (reason: string) => string;
  /** The tool result escalate gets: the run ends, its reason handed to the run that delegated it. */
  escalated: string;
}
