import type { ApprovalPolicy, McpServerRef } from '@tether/protocol';
import { tenantBudgetExceeded, usedUpBudget } from '@tether/store/budgets';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../errors.js';
import { sealMcpServers } from '../../mcp-servers.js';

/**
 * A submitted body (checked by `checkSubmission`) as the run's spec: its MCP servers checked and
 * sealed (see `sealMcpServers`), and its approval policy settled. The body's own policy, else its
 * session's defaults' (merged in later), else the tenant's default (`PUT /v1/approval-policy`,
 * from this process's copy): the run keeps what it took, whatever changes after. A policy's
 * approver must be a webhook endpoint of the tenant. A tenant over one of its budgets is refused
 * first (402 `ERR_TENANT_BUDGET_EXCEEDED`, see {@link checkTenantBudget}).
 */
export async function runSpec<
  T extends { mcpServers?: McpServerRef[] | undefined; approval?: ApprovalPolicy | undefined },
>(app: FastifyInstance, tenant: string, body: T, defaults?: { approval?: ApprovalPolicy | undefined }) {
  await checkTenantBudget(app, tenant);
  const spec = await sealMcpServers(body, tenant, { config: app.config, registered: app.mcpServers });
  if (body.approval) await checkApprover(app, tenant, body.approval);
  else if (!defaults?.approval) {
    const approval = await app.approvalPolicies.get(tenant);
    if (approval) return { ...spec, approval };
  }
  return spec;
}

/** Refuses a policy whose `approver` is not one of the tenant's webhook endpoints. */
export async function checkApprover(
  app: FastifyInstance,
  tenant: string,
  policy: ApprovalPolicy,
  field = 'approval',
): Promise<void> {
  if (policy.approver === undefined) return;
  if (await app.webhooks.get(tenant, policy.approver)) return;
  throw new ApiError(
    'ERR_APPROVAL_POLICY_INVALID',
    `${field}.approver: there is no webhook endpoint ${policy.approver} (POST /v1/webhooks creates one).`,
  );
}

/**
 * Refuses a submission of a tenant that has used up one of its budgets (402
 * `ERR_TENANT_BUDGET_EXCEEDED`, naming the budget and when it resets). The budgets come from this
 * process's copy; a tenant with none costs no round trip, one with some a read of its day and
 * month totals (one round trip).
 */
export async function checkTenantBudget(app: FastifyInstance, tenant: string): Promise<void> {
  const used = await usedUpBudget(app.budgets, app.usage, tenant);
  if (used) throw tenantBudgetExceeded(used);
}
