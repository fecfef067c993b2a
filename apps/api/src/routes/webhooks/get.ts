import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorResponseSchema, WebhookSchema } from '@tether/protocol';
import { webhookView } from '@tether/store/webhooks';
import { COMMON_ERRORS } from '../schemas.js';
import { endpointOf } from './endpoints.js';
import { EndpointParamsSchema } from './params.js';

/** `GET /v1/webhooks/:id`: read an endpoint. */
const getWebhookRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'getWebhook',
        summary: 'Read a webhook endpoint',
        params: EndpointParamsSchema,
        response: { 200: WebhookSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => webhookView(await endpointOf(app, request.tenant, request.params.id)),
  );
};

export default getWebhookRoute;
