import type { ApprovalDecisionBody } from '@tether/protocol';
import type { RunRecord } from '@tether/store/runs';
import { getSchema, jsonSchemaArguments } from '@tether/tools';
import { ApiError } from '../../../errors.js';

/**
 * The check of an edit, for `RunService.decide`: it refuses arguments the tool would refuse (400
 * `ERR_APPROVAL_ARGUMENTS_INVALID`, naming the field) before the decision is taken: a built-in
 * tool's or a client tool's, whose schemas the API has. An MCP server's tool checks them when the
 * call runs (the model is told, as for its own arguments). A request the run does not hold is left
 * to the decision's own refusal.
 */
export function editCheck(requestId: string, decision: ApprovalDecisionBody): (run: RunRecord) => void {
  return (run) => checkEdit(run, requestId, decision);
}

function checkEdit(run: RunRecord, requestId: string, decision: ApprovalDecisionBody): void {
  if (decision.decision !== 'edit') return;
  const pending = run.pendingApprovals?.find((approval) => approval.requestId === requestId);
  if (!pending) return;
  const client = run.spec?.tools?.find((tool) => tool.name === pending.tool);
  const builtin = getSchema(pending.tool);
  // A TypeBox schema is JSON Schema plus symbol keys: a JSON round trip leaves the JSON Schema.
  const parameters =
    client?.parameters ??
    (builtin ? (JSON.parse(JSON.stringify(builtin.parameters)) as Record<string, unknown>) : undefined);
  if (!parameters) return;
  const checked = jsonSchemaArguments({ name: pending.tool, parameters })(JSON.stringify(decision.arguments));
  if (!checked.ok)
    throw new ApiError('ERR_APPROVAL_ARGUMENTS_INVALID', `arguments: ${checked.result.content}`);
}
