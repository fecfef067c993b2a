import { type Static, Type } from '@sinclair/typebox';
import { EXPECTED } from './expected.js';

/**
 * Approval of tool calls: a run's policy says which of its calls wait for a person's decision
 * before they run (approve, edit the arguments, or reject). A call that needs one is not
 * executed: the run waits on it, holding no worker, as on a question.
 */

/** Limits on an approval policy and on decisions; the API enforces them and docs/api.md lists them. */
export const APPROVAL_LIMITS = {
  /** Entries of `tools`. */
  maxTools: 64,
  /** Entries of `bash.allow` and of `bash.ask`, each. */
  maxPatterns: 32,
  /** Characters of one bash pattern. */
  patternMaxLength: 500,
  /** How long a request waits when the policy says nothing: an hour. */
  timeoutDefaultMs: 60 * 60_000,
  timeoutMinMs: 1_000,
  /** A week. */
  timeoutMaxMs: 7 * 24 * 60 * 60_000,
  /** Characters of a rejection's message. */
  messageMaxLength: 4_000,
} as const;

/**
 * A webhook endpoint's id (`WEBHOOK_ID_PATTERN` of webhooks.ts, which cannot be imported here:
 * webhooks.ts imports the events, which import this module).
 */
export const APPROVER_ID_PATTERN = '^whk_[0-9a-hjkmnp-tv-z]{26}$';

/** A tool name, or a prefix of names ending in `*` (`github__*`; `*` alone: every tool). */
export const APPROVAL_TOOL_PATTERN = '^(\\*|[a-zA-Z0-9_-]{1,128}\\*?)$';

const bashPatterns = Type.Array(Type.String({ minLength: 1, maxLength: APPROVAL_LIMITS.patternMaxLength }), {
  maxItems: APPROVAL_LIMITS.maxPatterns,
});

/** Which of a run's tool calls wait for a decision, and what happens at the deadline. */
export const ApprovalPolicySchema = Type.Object(
  {
    /** Tools whose every call asks (names, or prefixes ending in `*`). */
    tools: Type.Optional(
      Type.Array(
        Type.String({
          pattern: APPROVAL_TOOL_PATTERN,
          [EXPECTED]: 'a tool name of letters, digits, _ or -, which may end in *',
        }),
        { maxItems: APPROVAL_LIMITS.maxTools, uniqueItems: true },
      ),
    ),
    /**
     * `bash` commands, by regular expressions (RE2): a command that matches an `allow` pattern runs
     * without asking (a plain command only: see docs/tools.md), one that matches an `ask` pattern
     * asks, and one that matches neither runs (unless `tools` names bash).
     */
    bash: Type.Optional(
      Type.Object(
        { allow: Type.Optional(bashPatterns), ask: Type.Optional(bashPatterns) },
        { additionalProperties: false },
      ),
    ),
    /** How long a request waits for a decision (ms); default an hour. */
    timeoutMs: Type.Optional(
      Type.Integer({ minimum: APPROVAL_LIMITS.timeoutMinMs, maximum: APPROVAL_LIMITS.timeoutMaxMs }),
    ),
    /** The decision taken at the deadline: `reject` (the default) or `approve`. */
    onTimeout: Type.Optional(Type.Union([Type.Literal('reject'), Type.Literal('approve')])),
    /**
     * A webhook endpoint of the tenant (`whk_…`) asked first: each request is delivered to it
     * (whatever events it subscribes to), and a 2xx answer whose body is a decision decides the
     * call. Any other answer leaves the request waiting for a person.
     */
    approver: Type.Optional(
      Type.String({
        pattern: APPROVER_ID_PATTERN,
        [EXPECTED]: 'a webhook endpoint id (whk_ and 26 letters and digits)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ApprovalPolicy = Static<typeof ApprovalPolicySchema>;

/** A tool call that waits for a decision: posted to `POST /v1/runs/:id/approvals/:requestId`. */
export const PendingApprovalSchema = Type.Object({
  requestId: Type.String(),
  /** The model's tool call id. */
  callId: Type.String(),
  tool: Type.String(),
  /** The model's arguments (as parsed JSON; a string when they were not JSON). */
  arguments: Type.Unknown(),
  /** Why it asks: the policy's entry that matched. */
  reason: Type.String(),
  expiresAt: Type.String({ format: 'date-time' }),
  /** The decision taken at the deadline. */
  onTimeout: Type.Union([Type.Literal('reject'), Type.Literal('approve')]),
  /** The webhook endpoint asked first (the policy's `approver`), when it names one. */
  approver: Type.Optional(Type.String()),
});
export type PendingApproval = Static<typeof PendingApprovalSchema>;

export const APPROVAL_DECISIONS = ['approve', 'edit', 'reject'] as const;
export type ApprovalDecisionKind = (typeof APPROVAL_DECISIONS)[number];

/** `POST /v1/runs/:id/approvals/:requestId` body. */
export const ApprovalDecisionBodySchema = Type.Union([
  Type.Object({ decision: Type.Literal('approve') }, { additionalProperties: false }),
  Type.Object(
    {
      decision: Type.Literal('edit'),
      /** The arguments the call runs with instead, checked against the tool's parameters. */
      arguments: Type.Record(Type.String(), Type.Unknown()),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      decision: Type.Literal('reject'),
      /** Told to the model with the refusal. */
      message: Type.Optional(Type.String({ maxLength: APPROVAL_LIMITS.messageMaxLength })),
    },
    { additionalProperties: false },
  ),
]);
export type ApprovalDecisionBody = Static<typeof ApprovalDecisionBodySchema>;

/** A decision as the run takes it: the body, with who decided (a tenant, or `timeout`). */
export type ApprovalDecision = ApprovalDecisionBody & { by: string };

/**
 * `GET` and `PUT /v1/approval-policy`: the tenant's default policy, which a run takes at submit
 * when neither its body nor its session's defaults name one (`policy` is null when there is none).
 */
export const TenantApprovalPolicySchema = Type.Object({
  policy: Type.Union([ApprovalPolicySchema, Type.Null()]),
  /** When it was last set; null when there is none. */
  updatedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
export type TenantApprovalPolicy = Static<typeof TenantApprovalPolicySchema>;
