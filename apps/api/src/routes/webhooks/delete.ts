import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorResponseSchema } from '@tether/protocol';
import { COMMON_ERRORS } from '../schemas.js';
import { notFound } from './endpoints.js';
import { EndpointParamsSchema } from './params.js';

/** `DELETE /v1/webhooks/:id`: delete an endpoint and its pending deliveries. */
const deleteWebhookRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.delete(
    '/:id',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook endpoint',
        description: '204; its pending deliveries are dropped. 404 `ERR_WEBHOOK_NOT_FOUND`.',
        params: EndpointParamsSchema,
        response: { 204: Type.Null(), 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      if (!(await app.webhooks.delete(request.tenant, request.params.id))) throw notFound(request.params.id);
      return reply.code(204).send(null);
    },
  );
};

export default deleteWebhookRoute;
