/**
 * What the agent writes into a skill must not try to instruct a later run's
 * model, nor carry a secret: a skill is read back into prompts and copied to
 * every worker. The patterns are few and specific, so prose about
 * instructions or keys passes; each refusal says what was found and what to
 * do instead.
 */

/** The outcome of {@link guardContent}. */
export type GuardVerdict = { ok: true } | { ok: false; reason: string };

const INSTRUCTIONS: readonly [RegExp, string][] = [
  [
    /\b(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier)\s+(instructions|rules|prompts?)\b/i,
    'it tells the model to ignore its instructions',
  ],
  [/\byou\s+are\s+now\s+(a|an|the|in)\b/i, 'it tells the model it is now someone else'],
  [/<\|im_(start|end)\|>|\[\/?INST\]|<\/?system>|^#{2,}\s*system\s*:/im, 'it holds a system-prompt marker'],
];

const SECRETS: readonly [RegExp, string][] = [
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----/, 'a private key'],
  [/\bsk-(proj-|ant-)?[A-Za-z0-9_-]{20,}/, 'an API key (sk-…)'],
  [/\b(sk|rk|pk)_live_[A-Za-z0-9]{16,}/, 'a live API key (…_live_…)'],
  [/\bAKIA[0-9A-Z]{16}\b/, 'an AWS access key id'],
  [/\bgh[pousr]_[A-Za-z0-9]{36,}\b/, 'a GitHub token'],
  [/\bxox[abprs]-[A-Za-z0-9-]{10,}/, 'a Slack token'],
  [/\bBearer\s+[A-Za-z0-9._~+/=-]{20,}/, 'a bearer token'],
];

/**
 * Refuses text that tries to instruct the model ("ignore previous
 * instructions", "you are now …", `<|im_start|>`, `[INST]`, `<system>`,
 * `### System:`) or carries a secret (private keys, API keys of common
 * shapes, bearer tokens), with a reason the model can act on.
 */
export function guardContent(text: string): GuardVerdict {
  for (const [pattern, what] of INSTRUCTIONS) {
    if (pattern.test(text)) {
      return {
        ok: false,
        reason: `The text was refused because ${what}. Stored text is read back into later prompts as data, so it must not address the model; describe the procedure instead.`,
      };
    }
  }
  for (const [pattern, what] of SECRETS) {
    if (pattern.test(text)) {
      return {
        ok: false,
        reason: `The text was refused because it holds what looks like ${what}. Never store secrets: refer to them by the name of the environment variable or setting that holds them.`,
      };
    }
  }
  return { ok: true };
}
