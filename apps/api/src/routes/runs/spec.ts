import type { ApprovalPolicy, McpServerRef } from '@tether/protocol';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../errors.js';
import { sealMcpServers } from '../../mcp-servers.js';

/**
 * A submitted body (checked by `checkSubmission`) as the run's spec: its MCP servers checked and
 * sealed (see `sealMcpServers`), and its approval policy settled. The body's own policy, else its
 * session's defaults' (merged in later), else the tenant's default (`PUT /v1/approval-policy`,
 * from this process's copy): the run keeps what it took, whatever changes after. A policy's
 * approver must be a webhook endpoint of the tenant.
 */
export async function runSpec<
  T extends { mcpServers?: McpServerRef[] | undefined; approval?: ApprovalPolicy | undefined },
>(app: FastifyInstance, tenant: string, body: T, defaults?: { approval?: ApprovalPolicy | undefined }) {
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
