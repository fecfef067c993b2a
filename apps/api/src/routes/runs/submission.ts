import { checkModelSpec } from '@tether/agent/spec';
import type { CreateRunBody } from '@tether/protocol';
import {
  checkApprovalPolicy,
  checkClientTools,
  checkOutputSpec,
  confinePath,
  SUBMIT_RESULT_TOOL,
} from '@tether/tools';
import { availableToolsets, builtinToolNames } from '../../catalog.js';
import type { ApiConfig } from '../../config.js';
import { ApiError } from '../../errors.js';
import { checkMcpServerRefs } from '../../mcp-servers.js';

/**
 * What the schema cannot say about a new run, checked before it is queued so
 * the client hears it now (400) rather than from a failed run later: the
 * toolsets exist and have tools, the model spec names a configured profile (or
 * replay, when the server allows it), and the files stay inside the workspace
 * with names the file system can hold, and the client tools are well formed
 * (names free of the run's built-in tools, schemas that compile, the limits),
 * and a structured result's `output.schema` is an object schema that compiles, within its limit,
 * and the MCP servers' entries (see `checkMcpServerRefs`; their URLs, names
 * and headers are checked and sealed by `sealMcpServers`).
 * Model errors are `@tether/agent`'s own (`ERR_MODEL_*`, status 400).
 */
export function checkSubmission(
  body: Partial<CreateRunBody>,
  config: Pick<ApiConfig, 'profiles' | 'defaultProfile' | 'allowReplay'>,
  options: { modelRequired?: boolean } = {},
): void {
  if (body.toolsets) {
    const available = availableToolsets();
    const unknown = body.toolsets.filter((toolset) => !available.includes(toolset));
    if (unknown.length > 0) {
      throw new ApiError(
        'ERR_TOOLSET_UNKNOWN',
        `Unknown or unavailable toolset${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; available: ${available.join(', ')}.`,
      );
    }
  }
  // A session's defaults may leave the model to each message.
  if (body.model !== undefined || options.modelRequired !== false) {
    const choice = checkModelSpec(body.model, {
      profiles: config.profiles,
      defaultProfile: config.defaultProfile,
      allowReplay: config.allowReplay,
    });
    // A budget in money needs prices to count it by: never a cap that silently caps nothing.
    if (body.limits?.maxCostUsd !== undefined && (choice.kind !== 'profile' || !choice.profile.prices)) {
      const model = choice.kind === 'profile' ? `profile ${choice.profile.name}` : 'a replay script';
      throw new ApiError(
        'ERR_VALIDATION',
        `body.limits.maxCostUsd needs a model whose profile has prices; ${model} has none (set \`prices\` on the profile).`,
      );
    }
  }
  if (body.output) {
    const problem = checkOutputSpec(body.output);
    if (problem) throw new ApiError('ERR_OUTPUT_SCHEMA_INVALID', problem);
  }
  if (body.tools) {
    // A run with `output` has submit_result beside its toolsets' tools.
    const builtins = [...builtinToolNames(body.toolsets), ...(body.output ? [SUBMIT_RESULT_TOOL] : [])];
    const problem = checkClientTools(body.tools, builtins);
    if (problem) throw new ApiError('ERR_CLIENT_TOOLS_INVALID', problem);
  }
  if (body.mcpServers) checkMcpServerRefs(body.mcpServers, body.tools);
  if (body.approval) {
    const problem = checkApprovalPolicy(body.approval);
    if (problem) throw new ApiError('ERR_APPROVAL_POLICY_INVALID', problem);
  }
  for (const path of Object.keys(body.files ?? {})) {
    // From a client on any system: `\` separates names too, and each path must name a file.
    const confined = confinePath(path, { portable: true, file: true });
    if (!confined.ok) {
      throw new ApiError('ERR_FILES_INVALID', `files: ${JSON.stringify(path)} ${confined.problem}.`);
    }
  }
}
