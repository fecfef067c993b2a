import { ToolError } from './errors.js';
import { resolveLimits, type ToolLimits } from './limits.js';
import { type Locale, type RunContext, SANDBOX_MODES, type SandboxMode, type ToolLogger } from './types.js';
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
  return {
    ctx,
    limits: resolveLimits(ctx.limits),
    workspace: new Workspace(ctx.workspace),
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
