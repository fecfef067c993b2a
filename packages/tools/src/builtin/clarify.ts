import { type Static, Type } from '@sinclair/typebox';
import { defineTool } from '../define-tool.js';
import type { ToolEnvironment } from '../tool-environment.js';
import type { Locale, Tool, ToolSchema } from '../types.js';

/** Parameters of `clarify`, as the design's 5.2. */
export const ClarifyParams = Type.Object(
  {
    question: Type.String({ minLength: 1, description: 'The question to ask the user' }),
    choices: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        maxItems: 4,
        description: 'Up to 4 suggested answers the user can pick from',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Catalog entry of `clarify` (toolset `interaction`). */
export const clarifySchema: ToolSchema<typeof ClarifyParams> = {
  name: 'clarify',
  toolset: 'interaction',
  description:
    'Ask the user one question when the task is ambiguous, has several reasonable readings, or lacks key information. Offer choices when you can. Ask one question at a time.',
  parameters: ClarifyParams,
};

/**
 * The question in the form the design's 5.3 gives for runs without an
 * interactive channel: `[clarify] 问题: ...\n选项: ...` (zh) or its English
 * equivalent. The choices line is left out when there are none.
 */
export function formatClarifyFallback(
  question: string,
  choices: readonly string[] | undefined,
  locale: Locale,
): string {
  const hasChoices = choices !== undefined && choices.length > 0;
  if (locale === 'zh') {
    return hasChoices
      ? `[clarify] 问题: ${question}\n选项: ${choices.join(' / ')}`
      : `[clarify] 问题: ${question}`;
  }
  return hasChoices
    ? `[clarify] Question: ${question}\nChoices: ${choices.join(' / ')}`
    : `[clarify] Question: ${question}`;
}

/**
 * Makes the default `clarify`: no blocking logic; it returns the question
 * text so the agent ends its turn with it. The runtime injects the suspending
 * behaviour when the run has an interactive channel.
 */
export function createClarifyTool(environment: ToolEnvironment): Tool {
  return defineTool(clarifySchema, async (args) => ({
    ok: true,
    content: formatClarifyFallback(args.question, args.choices, environment.locale),
  }));
}

/** Validated arguments of `clarify`. */
export type ClarifyArgs = Static<typeof ClarifyParams>;
