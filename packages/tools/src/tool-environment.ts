import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { relativeInside } from './confine-path.js';
import { ToolError } from './errors.js';
import { resolveLimits, type ToolLimits } from './limits.js';
import { type SandboxUser, sandboxUserFor } from './sandbox.js';
import {
  type Locale,
  type ReadOnlyBind,
  type RunContext,
  SANDBOX_MODES,
  type SandboxMode,
  type ToolLogger,
} from './types.js';
import { Workspace } from './workspace.js';

/** What every built-in tool factory receives: the run context, validated and with defaults merged once. */
export interface ToolEnvironment {
  readonly ctx: RunContext;
  readonly limits: Readonly<ToolLimits>;
  readonly workspace: Workspace;
  readonly locale: Locale;
  readonly sandbox: SandboxMode;
  readonly allowNetwork: boolean;
  readonly env: Readonly<Record<string, string>>;
  readonly logger: ToolLogger;
  /** The host user commands run as under bwrap (a root worker's), or undefined: the worker's own. */
  readonly sandboxUser: SandboxUser | undefined;
  readonly commandLeaseMs: number;
  /** Host directories `bash` sees read-only under bwrap. */
  readonly readOnlyBinds: readonly ReadOnlyBind[];
  /** Real path of the directory of every run's workspace (hidden from commands but for this run's). */
  workspaceRoot(): Promise<string>;
}

/** Default of {@link RunContext.commandLeaseMs}. */
export const DEFAULT_COMMAND_LEASE_MS = 5000;

function validUser(user: SandboxUser | undefined): boolean {
  return (
    user === undefined ||
    (Number.isSafeInteger(user.uid) && user.uid > 0 && Number.isSafeInteger(user.gid) && user.gid > 0)
  );
}

const silentLogger: ToolLogger = {
  warn: () => undefined,
  info: () => undefined,
  debug: () => undefined,
};

/**
 * Validates a run context and merges its defaults.
 * @throws ToolError `ERR_TOOL_INVALID_CONTEXT` naming the field and what is wrong
 */
export function createToolEnvironment(ctx: RunContext): ToolEnvironment {
  const invalid = (message: string) => new ToolError('ERR_TOOL_INVALID_CONTEXT', message);
  if (typeof ctx.workspace !== 'string') throw invalid('workspace must be a string');
  const sandbox = ctx.sandbox ?? 'auto';
  if (!SANDBOX_MODES.includes(sandbox)) {
    throw invalid(`sandbox must be one of ${SANDBOX_MODES.join(', ')} (got ${JSON.stringify(sandbox)})`);
  }
  const locale = ctx.locale ?? 'en';
  if (locale !== 'en' && locale !== 'zh')
    throw invalid(`locale must be "en" or "zh" (got ${JSON.stringify(locale)})`);
  const env = { ...(ctx.env ?? {}) };
  for (const [key, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
      throw invalid(`env: ${JSON.stringify(key)} is not a variable name`);
    if (typeof value !== 'string' || value.includes('\0')) {
      throw invalid(`env.${key} must be a string without NUL bytes`);
    }
  }
  if (!validUser(ctx.sandboxUser)) {
    throw invalid('sandboxUser must have a positive integer uid and gid (not root)');
  }
  const commandLeaseMs = ctx.commandLeaseMs ?? DEFAULT_COMMAND_LEASE_MS;
  if (!Number.isSafeInteger(commandLeaseMs) || commandLeaseMs < 100) {
    throw invalid(`commandLeaseMs must be an integer >= 100 (got ${String(ctx.commandLeaseMs)})`);
  }
  const readOnlyBinds = [...(ctx.readOnlyBinds ?? [])];
  for (const [index, bind] of readOnlyBinds.entries()) {
    if (typeof bind.source !== 'string' || !path.isAbsolute(bind.source)) {
      throw invalid(`readOnlyBinds[${index}].source must be an absolute path`);
    }
    const under =
      typeof bind.target === 'string' ? relativeInside('/run', path.posix.normalize(bind.target)) : '';
    if (!under || !path.posix.isAbsolute(bind.target)) {
      throw invalid(
        `readOnlyBinds[${index}].target must be an absolute path under /run (got ${JSON.stringify(bind.target)})`,
      );
    }
    if (
      bind.hide !== undefined &&
      (!path.isAbsolute(bind.hide) || !relativeInside(path.resolve(bind.hide), path.resolve(bind.source)))
    ) {
      throw invalid(`readOnlyBinds[${index}].hide must be an absolute directory that holds the source`);
    }
  }
  const sandboxUser = sandboxUserFor(ctx.sandboxUser);
  const workspaceRoot = path.resolve(ctx.workspaceRoot ?? path.dirname(path.resolve(ctx.workspace)));
  let realWorkspaceRoot: Promise<string> | undefined;
  return {
    ctx,
    limits: resolveLimits(ctx.limits),
    workspace: new Workspace(ctx.workspace, sandboxUser === undefined ? {} : { owner: sandboxUser }),
    sandboxUser,
    commandLeaseMs,
    readOnlyBinds,
    workspaceRoot() {
      realWorkspaceRoot ??= realpath(workspaceRoot).catch(() => workspaceRoot);
      return realWorkspaceRoot;
    },
    locale,
    sandbox,
    allowNetwork: ctx.allowNetwork ?? false,
    env: Object.freeze(env),
    logger: ctx.logger ?? silentLogger,
  };
}

/** The signal a call should honour: the run's cancel or the call's own. */
export function callSignal(environment: ToolEnvironment, callSignalValue: AbortSignal): AbortSignal {
  return AbortSignal.any([environment.ctx.signal, callSignalValue]);
}

/** Throws `ERR_TOOL_CANCELLED` when `signal` has fired. */
export function throwIfCancelled(signal: AbortSignal, toolName: string): void {
  if (signal.aborted) {
    throw new ToolError('ERR_TOOL_CANCELLED', `The ${toolName} call was cancelled; nothing more was done.`);
  }
}
