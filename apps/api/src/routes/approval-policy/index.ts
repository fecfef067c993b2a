import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ApprovalPolicySchema, ErrorResponseSchema, TenantApprovalPolicySchema } from '@tether/protocol';
import type { StoredApprovalPolicy } from '@tether/store/approval-policies';
import { checkApprovalPolicy } from '@tether/tools';
import { ApiError } from '../../errors.js';
import { checkApprover } from '../runs/spec.js';
import { COMMON_ERRORS } from '../schemas.js';

/** The route's answer: the policy and when it was set, or nulls. */
function view(stored: StoredApprovalPolicy | undefined) {
  return stored
    ? { policy: stored.policy, updatedAt: new Date(stored.updatedAt).toISOString() }
    : { policy: null, updatedAt: null };
}

/**
 * `/v1/approval-policy`: the tenant's default approval policy. A run takes it at submit when
 * neither its body nor its session's defaults name an `approval` (their own replaces it as a
 * whole; `{}` holds nothing), and keeps it: a change applies to runs submitted after it.
 */
const approvalPolicyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      schema: {
        tags: ['approvals'],
        operationId: 'getApprovalPolicy',
        summary: "Read the tenant's default approval policy",
        description: '`policy` and `updatedAt` are null when the tenant has set none.',
        response: { 200: TenantApprovalPolicySchema, ...COMMON_ERRORS },
      },
    },
    async (request) => view(await app.approvalPolicies.read(request.tenant)),
  );

  app.put(
    '/',
    {
      schema: {
        tags: ['approvals'],
        operationId: 'setApprovalPolicy',
        summary: "Set the tenant's default approval policy",
        description:
          "The policy runs take at submit when neither their body nor their session's defaults name an `approval`: checked as a run's (400 `ERR_APPROVAL_POLICY_INVALID` naming the field, for a bash pattern RE2 refuses or an `approver` that is not one of the tenant's webhook endpoints). It replaces the one before; runs already submitted keep theirs. Every API process uses it within moments (a change is published to them all).",
        body: ApprovalPolicySchema,
        response: {
          200: TenantApprovalPolicySchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request) => {
      const problem = checkApprovalPolicy(request.body);
      if (problem) throw new ApiError('ERR_APPROVAL_POLICY_INVALID', problem);
      await checkApprover(app, request.tenant, request.body);
      return view(await app.approvalPolicies.save(request.tenant, request.body));
    },
  );

  app.delete(
    '/',
    {
      schema: {
        tags: ['approvals'],
        operationId: 'deleteApprovalPolicy',
        summary: "Remove the tenant's default approval policy",
        description:
          '204 whether or not there was one: runs submitted after it hold no call unless they name a policy of their own.',
        response: { 204: Type.Null(), ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      await app.approvalPolicies.remove(request.tenant);
      return reply.code(204).send(null);
    },
  );
};

export default approvalPolicyRoutes;
