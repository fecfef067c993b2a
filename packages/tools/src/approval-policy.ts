/**
 * The approval policy's matcher: whether a tool call waits for a person's
 * decision before it runs, and why. The checks, in order:
 *
 * 1. `clarify` and `escalate` never ask: they are the agent talking to people already.
 * 2. A `bash` call whose command is plain (no shell syntax, no quotes, no
 *    backslashes) and is found by an `allow` pattern runs without asking,
 *    even when `tools` names bash or an `ask` pattern matches too.
 * 3. The first `tools` entry that matches the tool's name asks.
 * 4. For `bash`, the first `ask` pattern that matches any view of the command
 *    asks (the raw command, the command without quotes and backslashes, and
 *    each piece of either split at the shell's separators).
 * 5. Anything else runs.
 *
 * `allow` is strict on purpose: a command it lets through must be exactly
 * what the pattern saw, so any command that could chain, redirect or hide a
 * word is left to `tools` and `ask`. `ask` is a tripwire, not a sandbox: a
 * shell has more ways to spell a command than the views cover (`sh -c`,
 * variables, `env git push`), so a policy that must hold lists what may run
 * in `allow` and asks for the rest with `ask: [".*"]`.
 *
 * Patterns run on RE2 (re2js): linear time, so a tenant's pattern
 * (`^(a|a)*$`) cannot stall the worker that checks a model's calls. RE2 has
 * no lookaround or backreferences: a policy that uses them is refused at
 * submit ({@link checkApprovalPolicy}).
 */
import { APPROVAL_LIMITS, type ApprovalPolicy } from '@tether/protocol';
import { RE2JS } from 're2js';
import { parseArgumentsObject } from './execute-tool.js';

/** A run's approval policy, compiled once for an attempt. */
export interface CompiledApprovalPolicy {
  /**
   * Why this call must wait for a decision (the policy's entry that matched,
   * e.g. `tools: github__*` or `bash.ask: ^git push`), or undefined when it
   * runs without one. `arguments` is the model's raw JSON arguments string.
   */
  reasonFor(call: { name: string; arguments: string }): string | undefined;
  /** How long a request waits for a decision (ms): the policy's, or an hour. */
  timeoutMs: number;
  /** The decision taken at the deadline: the policy's, or `reject`. */
  onTimeout: 'reject' | 'approve';
  /** The webhook endpoint asked first, if the policy names one. */
  approver?: string | undefined;
}

/** Tools that never ask: a question or an escalation is already addressed to a person. */
const EXEMPT_TOOLS: ReadonlySet<string> = new Set(['clarify', 'escalate']);

/** What makes a command not plain: shell syntax that chains, redirects or substitutes, and quoting. */
const NOT_PLAIN = /[;&|`$<>(){}\n\r\\'"]/;

/** Quotes and backslashes, which the shell removes: `g''it`, `g\it` and `"git"` are all `git`. */
const QUOTING = /['"\\]/g;

/** Where one command of a line ends and another starts (or a substitution opens or closes). */
const SEPARATORS = /&&|\|\||\$\(|[;&|\n\r`()]/;

interface BashPattern {
  source: string;
  regex: RE2JS;
}

interface Rules {
  tools: readonly string[];
  allow: readonly BashPattern[];
  ask: readonly BashPattern[];
}

/**
 * Compiles a policy already checked by {@link checkApprovalPolicy}. Throws a
 * plain Error naming the field (`approval.bash.ask[2]: …`) if a pattern does
 * not compile.
 */
export function compileApprovalPolicy(policy: ApprovalPolicy): CompiledApprovalPolicy {
  const rules: Rules = {
    tools: policy.tools ?? [],
    allow: compileBashPatterns(policy.bash?.allow, 'allow'),
    ask: compileBashPatterns(policy.bash?.ask, 'ask'),
  };
  return {
    reasonFor: (call) => reasonFor(rules, call),
    timeoutMs: policy.timeoutMs ?? APPROVAL_LIMITS.timeoutDefaultMs,
    onTimeout: policy.onTimeout ?? 'reject',
    approver: policy.approver,
  };
}

/**
 * What is wrong with a policy the schema accepted, as one message naming the
 * field (`approval.bash.ask[2]: …`), or undefined when it is fine: a bash
 * pattern that does not compile under RE2 (lookaround, backreferences, or
 * plain bad syntax).
 */
export function checkApprovalPolicy(policy: ApprovalPolicy): string | undefined {
  try {
    compileBashPatterns(policy.bash?.allow, 'allow');
    compileBashPatterns(policy.bash?.ask, 'ask');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** The patterns of `bash.allow` or `bash.ask`, compiled; throws naming the first that does not compile. */
function compileBashPatterns(sources: readonly string[] | undefined, list: 'allow' | 'ask'): BashPattern[] {
  return (sources ?? []).map((source, index) => {
    try {
      return { source, regex: RE2JS.compile(source) };
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new Error(
        `approval.bash.${list}[${index}]: ${JSON.stringify(source)} is not a pattern RE2 accepts (it has no lookaround or backreferences): ${why}`,
        { cause: error },
      );
    }
  });
}

function reasonFor(rules: Rules, call: { name: string; arguments: string }): string | undefined {
  if (EXEMPT_TOOLS.has(call.name)) return undefined;
  const byName = toolsReason(rules.tools, call.name);
  if (call.name !== 'bash') return byName;
  // Arguments the bash tool will refuse run nothing, so only `tools` can make them ask.
  const command = bashCommand(call.arguments);
  if (command === undefined) return byName;
  if (!NOT_PLAIN.test(command) && rules.allow.some((pattern) => pattern.regex.test(command))) {
    return undefined;
  }
  return byName ?? askReason(rules.ask, command);
}

/** The first `tools` entry naming this tool: exactly, or as a prefix ending in `*`. */
function toolsReason(entries: readonly string[], name: string): string | undefined {
  const entry = entries.find((candidate) =>
    candidate.endsWith('*') ? name.startsWith(candidate.slice(0, -1)) : name === candidate,
  );
  return entry === undefined ? undefined : `tools: ${entry}`;
}

/** The bash call's `command`, trimmed, or undefined when the arguments are not the tool's. */
function bashCommand(rawArguments: string): string | undefined {
  const parsed = parseArgumentsObject('bash', rawArguments, 'command: string');
  if (!parsed.ok) return undefined;
  const { command } = parsed.args;
  return typeof command === 'string' ? command.trim() : undefined;
}

/** The first `ask` pattern found in any view of the command. */
function askReason(ask: readonly BashPattern[], command: string): string | undefined {
  if (ask.length === 0) return undefined;
  const views = commandViews(command);
  const hit = ask.find((pattern) => views.some((view) => pattern.regex.test(view)));
  return hit === undefined ? undefined : `bash.ask: ${hit.source}`;
}

/**
 * The command as an `ask` pattern anchored with `^` should see it: whole,
 * without quoting, and each command within either, so that `echo hi; git
 * push`, `$(git push)` or `g''it push` are caught by `^git push`.
 */
function commandViews(command: string): string[] {
  const whole = [command, command.replace(QUOTING, '')];
  const pieces = whole.flatMap((view) =>
    view
      .split(SEPARATORS)
      .map((piece) => piece.trim())
      .filter((piece) => piece !== ''),
  );
  return [...new Set([...whole, ...pieces])];
}
