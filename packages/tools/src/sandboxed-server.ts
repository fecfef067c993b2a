import { createCgroup, sandboxResolver } from './command-sandbox.js';
import { SandboxedProcess } from './run-command.js';
import { createToolEnvironment } from './tool-environment.js';
import type { RunContext } from './types.js';

/** A program a run starts and talks to over its stdin and stdout (an operator's MCP stdio server). */
export interface ServerProgram {
  /** The program: an absolute path, or a name looked up on the sandbox's `PATH`. */
  command: string;
  args: readonly string[];
  /** Set over the run's environment (`RunContext.env` and the allow-list `bash` gets). */
  env: Readonly<Record<string, string>>;
}

/**
 * Starts a long-lived program of a run inside the run's sandbox, under the
 * same rules as `bash` (bubblewrap as `TETHER_SANDBOX` says, the cgroup and
 * rlimits of a command, the run's workspace as its working directory, no
 * network unless the run's commands have it, the worker's environment not
 * passed on). It runs until stopped, or until the run is cancelled; once it
 * has ended, everything it started is dead and its cgroup removed. `label`
 * names it in errors (`the MCP server x cannot run: …`).
 * @throws ToolError `ERR_TOOL_SANDBOX_UNAVAILABLE`, `ERR_TOOL_SPAWN_FAILED`
 */
export async function startSandboxedServer(
  ctx: RunContext,
  program: ServerProgram,
  label: string,
): Promise<SandboxedProcess> {
  const environment = createToolEnvironment(ctx);
  const { support, spec } = await sandboxResolver(environment, label)();
  const cgroup = await createCgroup(environment, support, label);
  try {
    const server = await SandboxedProcess.start(
      { ...spec, env: { ...spec.env, ...program.env }, cgroup },
      [program.command, ...program.args],
      ctx.signal,
    );
    void server.ended.finally(() => cgroup?.remove().catch(() => undefined));
    return server;
  } catch (error) {
    await cgroup?.remove().catch(() => undefined);
    throw error;
  }
}
