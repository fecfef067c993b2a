import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { WebhookListSchema } from '@tether/protocol';
import { webhookView } from '@tether/store/webhooks';
import { COMMON_ERRORS } from '../schemas.js';

/** `GET /v1/webhooks`: the tenant's endpoints, oldest first. */
const listWebhooksRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'listWebhooks',
        summary: "List the tenant's webhook endpoints",
        description: 'Oldest first; a disabled endpoint shows `enabled: false`, when and why.',
        response: { 200: WebhookListSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => ({ data: (await app.webhooks.list(request.tenant)).map(webhookView) }),
  );
};

export default listWebhooksRoute;
