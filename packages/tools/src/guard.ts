/**
 * The content guard: what an agent writes to be read back into later prompts
 * (memory entries, skills) must be data, not instructions, and must carry no
 * secret. `guardContent` checks text against two lists of patterns, in order:
 *
 * 1. **Instructions**: phrases that try to steer the model that reads the text
 *    later ("ignore previous instructions", "you are now a …") and the
 *    markers of chat templates and system prompts (`<|im_start|>`, `[INST]`,
 *    `<system>`, `### System:`). Ordinary prose about instructions or prompts
 *    ("the README has install instructions", "the system prompt is built in
 *    prompt.ts") does not match: each pattern needs the imperative form or
 *    the exact marker.
 * 2. **Secrets**: credentials of well-known shapes (provider API keys, cloud
 *    access keys, tokens, private key blocks, bearer tokens, passwords in URLs
 *    or assignments). Each needs the shape's prefix and enough random-looking
 *    characters after it, so a mention ("an sk- key", "a Bearer token") does
 *    not match.
 *
 * The first match refuses the text with a reason written for the model: what
 * was found (never the secret itself) and what to save instead.
 */

/** Why a pattern refuses text. */
export type GuardKind = 'instruction' | 'secret';

/** One pattern of the guard. */
export interface GuardPattern {
  kind: GuardKind;
  /** What it finds, for the reason and for docs/tools.md. */
  name: string;
  pattern: RegExp;
  /** A further check of the match (a password value needs a digit, for instance). */
  accept?: (match: RegExpMatchArray) => boolean;
}

/** The guard's verdict. */
export type GuardResult = { ok: true } | { ok: false; kind: GuardKind; reason: string };

/** Instruction patterns, in the order they are tried. */
export const INSTRUCTION_PATTERNS: readonly GuardPattern[] = [
  {
    kind: 'instruction',
    name: '"ignore / disregard / forget (all) previous instructions"',
    pattern:
      /\b(?:ignore|disregard|forget|override|skip)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*(?:previous|prior|above|earlier|preceding|former|original|system|existing)\s+(?:instructions?|prompts?|messages|rules|directions|guidelines|context)\b/i,
  },
  {
    kind: 'instruction',
    name: '"do not follow your (previous / system) instructions"',
    pattern:
      /\b(?:do\s+not|don't|never|stop)\s+(?:follow|obey)(?:ing)?\s+(?:the\s+|your\s+|any\s+)?(?:previous\s+|prior\s+|system\s+|original\s+)?(?:instructions|rules|prompt|guidelines)\b/i,
  },
  {
    kind: 'instruction',
    name: '"you are now a / an / no longer …" (a new role for the model)',
    pattern:
      /\byou\s+are\s+now\s+(?:a|an|the|my|no\s+longer|in\s+\w+\s+mode|DAN|free|unrestricted|jailbroken|unfiltered)\b/i,
  },
  {
    kind: 'instruction',
    name: '"reveal / print your system prompt"',
    pattern:
      /\b(?:reveal|print|show|output|repeat|leak)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+prompt|hidden\s+instructions|initial\s+instructions)\b/i,
  },
  {
    kind: 'instruction',
    name: 'a new prompt opening a line ("New instructions:", "Updated system prompt:")',
    pattern: /^[\t >*-]*(?:new|updated|real|actual)\s+(?:system\s+)?(?:instructions|prompt)\s*:/im,
  },
  {
    kind: 'instruction',
    name: 'a chat-template token (`<|im_start|>`, `<|system|>`, `<|eot_id|>`, …)',
    pattern: /<\|[A-Za-z_]{2,}[A-Za-z0-9_]*\|>/,
  },
  {
    kind: 'instruction',
    name: 'a Llama prompt marker (`[INST]`, `[/INST]`, `<<SYS>>`)',
    pattern: /\[\/?INST\]|<<\/?SYS>>/,
  },
  {
    kind: 'instruction',
    name: 'a system or instruction tag (`<system>`, `</system>`, `<system_prompt>`, `<instructions>`)',
    pattern: /<\/?\s*(?:system|system[-_ ]?prompt|instructions?|sys)\s*>/i,
  },
  {
    kind: 'instruction',
    name: 'a role heading (`### System:`, `### Instruction:`, `## Assistant:`)',
    pattern: /^\s*#{1,6}\s*(?:system|instructions?|assistant|user)\s*:/im,
  },
];

/** A password-like value: 12 or more characters with a letter and a digit, not a placeholder. */
function looksLikeSecretValue(value: string | undefined): boolean {
  if (!value) return false;
  return /[A-Za-z]/.test(value) && /[0-9]/.test(value) && !/^(?:x+|\*+|<.*>|\$.*|\{.*\})$/i.test(value);
}

/** Secret patterns, in the order they are tried. */
export const SECRET_PATTERNS: readonly GuardPattern[] = [
  {
    kind: 'secret',
    name: 'a private key (`-----BEGIN … PRIVATE KEY-----`)',
    pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/,
  },
  {
    kind: 'secret',
    name: 'an OpenAI or Anthropic style API key (`sk-…`)',
    pattern: /(?<![A-Za-z0-9])sk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,}/,
  },
  {
    kind: 'secret',
    name: 'a Stripe key (`sk_live_…`, `rk_test_…`)',
    pattern: /(?<![A-Za-z0-9])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/,
  },
  {
    kind: 'secret',
    name: 'an AWS access key id (`AKIA…`, `ASIA…`)',
    pattern: /(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}(?![A-Z0-9])/,
  },
  {
    kind: 'secret',
    name: 'an AWS secret access key',
    pattern: /aws_?secret_?access_?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}/i,
  },
  {
    kind: 'secret',
    name: 'a GitHub token (`ghp_…`, `gho_…`, `ghs_…`, `github_pat_…`)',
    pattern: /(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/,
  },
  {
    kind: 'secret',
    name: 'a GitLab token (`glpat-…`)',
    pattern: /(?<![A-Za-z0-9])glpat-[A-Za-z0-9_-]{20,}/,
  },
  {
    kind: 'secret',
    name: 'a Slack token (`xoxb-…`, `xoxp-…`)',
    pattern: /(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}/,
  },
  {
    kind: 'secret',
    name: 'a Google API key (`AIza…`)',
    pattern: /(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}/,
  },
  {
    kind: 'secret',
    name: 'a JSON Web Token (`eyJ….eyJ….…`)',
    pattern: /(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/,
  },
  {
    kind: 'secret',
    name: 'a bearer token (`Bearer <token>`)',
    pattern: /\bBearer\s+([A-Za-z0-9._~+/-]{20,}=*)/,
    accept: (match) => looksLikeSecretValue(match[1]),
  },
  {
    kind: 'secret',
    name: 'a password in a URL (`scheme://user:password@host`)',
    pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s:@/]*:([^\s@/]{3,})@[^\s]/i,
    accept: (match) => !/^(?:\*+|x+|<.*>|\$.*|\{.*\}|password|pass|secret)$/i.test(match[1] ?? ''),
  },
  {
    kind: 'secret',
    name: 'a password, secret, token or API key assigned a value (`password=…`, `api_key: …`)',
    pattern:
      /\b(?:password|passwd|pwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|private[_-]?key)["']?\s*[:=]\s*["']?([^\s"',;]{12,})/i,
    accept: (match) => looksLikeSecretValue(match[1]),
  },
];

/** Every pattern, instructions first. */
export const GUARD_PATTERNS: readonly GuardPattern[] = [...INSTRUCTION_PATTERNS, ...SECRET_PATTERNS];

/** What guarded text becomes: a memory entry (read back as data) or a skill (read back as steps to follow). */
export type GuardTarget = 'memory' | 'skill';

/**
 * Checks text an agent wants stored for later prompts (a memory entry, a
 * skill's files). `{ ok: true }`, or the first problem with a reason the model
 * can act on, in the words of what the text becomes (`kind`).
 */
export function guardContent(text: string, kind: GuardTarget = 'memory'): GuardResult {
  for (const rule of GUARD_PATTERNS) {
    if (matches(rule, text)) return { ok: false, kind: rule.kind, reason: reasonFor(rule, kind) };
  }
  return { ok: true };
}

/** Whether the rule matches somewhere in the text: every match is tried against `accept`, not only the first. */
function matches(rule: GuardPattern, text: string): boolean {
  if (!rule.accept) return rule.pattern.test(text);
  const all = new RegExp(rule.pattern.source, `${rule.pattern.flags}g`);
  for (const match of text.matchAll(all)) if (rule.accept(match)) return true;
  return false;
}

function reasonFor(rule: GuardPattern, kind: GuardTarget): string {
  if (rule.kind === 'instruction' && kind === 'skill') {
    return `The content tries to take over the model (${rule.name}). A skill is read by later runs as steps inside their own instructions, so it may not override earlier instructions, speak as a system prompt, or carry prompt markers. Write the steps as plain guidance for the task (for example "Run scripts/check.sh before a release").`;
  }
  if (rule.kind === 'instruction') {
    return `The content reads as an instruction to a model (${rule.name}), not as a fact. Stored text is read back into later prompts as data, so it may not carry instructions or prompt markers. Write the fact itself in plain words (for example "The user prefers answers in French"), without addressing the model.`;
  }
  return `The content holds what looks like a secret: ${rule.name}. Never store credentials: they would be shown to every later run and to people reading this store. Store where the secret is kept instead (for example "the deploy key is the CI secret DEPLOY_KEY"), or leave it out.`;
}
