/**
 * What a run's sandboxed programs are started with, the same for each of
 * them (a `bash` command, an operator's MCP stdio server): the sandbox mode
 * resolved once per run (bubblewrap probed, its fallback warned about once),
 * the host programs, the cgroup support, and each program's cgroup with the
 * run's limits.
 */
import { type CgroupSupport, CommandCgroup, cgroupSupport } from './cgroup.js';
import { ToolError } from './errors.js';
import type { CommandSandbox } from './run-command.js';
import {
  type EffectiveSandbox,
  findHostPrograms,
  probeBwrap,
  resolveSandbox,
  unreachableBy,
} from './sandbox.js';
import type { ToolEnvironment } from './tool-environment.js';

/** The sandbox of a program of the run, but its cgroup (one per program, see {@link createCgroup}). */
export interface SandboxSetup {
  support: CgroupSupport;
  spec: Omit<CommandSandbox, 'cgroup'>;
}

/**
 * Resolves a run's sandbox at its first use and keeps it: `label` names the
 * program in the messages (`bash cannot run: …`, `…; continue without bash`).
 * Running without a sandbox, or without cgroup limits, is logged once as a
 * warning.
 * @throws ToolError `ERR_TOOL_SANDBOX_UNAVAILABLE` when bwrap is required and does not work,
 *   `ERR_TOOL_SPAWN_FAILED` when bash or sh is missing
 */
export function sandboxResolver(environment: ToolEnvironment, label: string): () => Promise<SandboxSetup> {
  const { ctx, limits, logger } = environment;
  let sandbox: Promise<EffectiveSandbox | { unavailable: string }> | undefined;
  let warned = false;
  let warnedCgroup = false;
  return async () => {
    sandbox ??= environment.workspaceRoot().then(async (root) => {
      const unreachable = await unreachableBy(root, environment.sandboxUser);
      return resolveSandbox(environment.sandbox, async () => {
        const probe = await probeBwrap(environment.sandboxUser);
        return unreachable === undefined || !probe.ok ? probe : { ...probe, ok: false, detail: unreachable };
      });
    });
    const effective = await sandbox;
    if ('unavailable' in effective) {
      throw new ToolError(
        'ERR_TOOL_SANDBOX_UNAVAILABLE',
        `${label} cannot run: the sandbox (bubblewrap) does not work on this host (${effective.unavailable}). This is a problem of the worker's setup, not of the command; continue without ${label}.`,
      );
    }
    if (effective.mode === 'none' && !warned) {
      warned = true;
      logger.warn(
        { runId: ctx.runId, requested: environment.sandbox, reason: effective.fallbackReason },
        `${label} runs without a sandbox: commands can read and write anything the worker can, and use the network`,
      );
    }
    const programs = findHostPrograms();
    if (programs.bash === undefined || programs.sh === undefined) {
      throw new ToolError(
        'ERR_TOOL_SPAWN_FAILED',
        `${label} cannot run: ${programs.bash === undefined ? 'bash' : 'sh'} is not installed on this host. This is a problem of the worker's setup; continue without ${label}.`,
      );
    }
    const support = await cgroupSupport();
    if (support.kind === 'none' && !warnedCgroup) {
      warnedCgroup = true;
      logger.warn(
        { runId: ctx.runId, reason: support.reason },
        `${label} runs without cgroup limits (no process-count or memory limit per command; rlimits only)`,
      );
    }
    const workspace = await environment.workspace.realRoot();
    return {
      support,
      spec: {
        tag: ctx.runId,
        workspace,
        workspaceRoot: await environment.workspaceRoot(),
        sandbox: effective.mode,
        programs: { bash: programs.bash, sh: programs.sh, bwrap: programs.bwrap },
        user: effective.mode === 'bwrap' ? environment.sandboxUser : undefined,
        userNamespace: effective.userNamespace,
        readOnlyBinds: environment.readOnlyBinds,
        leaseMs: environment.commandLeaseMs,
        allowNetwork: environment.allowNetwork,
        env: environment.env,
        tmpBytes: limits.bashTmpBytes,
        fileSizeBytes: limits.bashFileSizeBytes,
        cpuSeconds: limits.bashCpuSeconds,
        openFiles: limits.bashOpenFiles,
      },
    };
  };
}

/** A program's cgroup, or none when the host has no cgroup support (detected once per process). */
export async function createCgroup(
  environment: ToolEnvironment,
  support: CgroupSupport,
  label: string,
): Promise<CommandCgroup | undefined> {
  if (support.kind === 'none') return undefined;
  const { ctx, limits } = environment;
  const name = `${ctx.runId}.${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  try {
    return await CommandCgroup.create(
      support,
      name,
      { pidsMax: limits.bashMaxProcesses, memoryBytes: limits.bashMemoryBytes },
      environment.sandboxUser,
    );
  } catch (error) {
    throw new ToolError(
      'ERR_TOOL_SPAWN_FAILED',
      `${label} cannot run: the command's resource limits (cgroup) could not be set up (${error instanceof Error ? error.message : String(error)}). This is a problem of the worker's host, not of the command.`,
      { cause: error },
    );
  }
}
