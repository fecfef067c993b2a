import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { checkOutboundUrl } from '@tether/outbound';
import { ErrorResponseSchema, UpdateWebhookBodySchema, WebhookSchema } from '@tether/protocol';
import { webhookView } from '@tether/store/webhooks';
import { COMMON_ERRORS } from '../schemas.js';
import { endpointOf, notFound, outboundPolicy } from './endpoints.js';
import { EndpointParamsSchema } from './params.js';

/** `PATCH /v1/webhooks/:id`: change an endpoint, enable or disable it. */
const updateWebhookRoute: FastifyPluginAsyncTypebox = async (app) => {
  const policy = outboundPolicy(app);

  app.patch(
    '/:id',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'updateWebhook',
        summary: 'Change a webhook endpoint',
        description:
          'Any of `url`, `events`, `description` (`""` removes it) and `enabled`: `true` enables a disabled endpoint again (its failures are forgotten), `false` disables it. 200 with the endpoint.',
        params: EndpointParamsSchema,
        body: UpdateWebhookBodySchema,
        response: {
          200: WebhookSchema,
          404: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request) => {
      const { url, events, description, enabled } = request.body;
      if (url !== undefined) checkOutboundUrl(url, policy);
      const changes = { url, events, description, enabled };
      if (!(await app.webhooks.update(request.tenant, request.params.id, changes))) {
        throw notFound(request.params.id);
      }
      return webhookView(await endpointOf(app, request.tenant, request.params.id));
    },
  );
};

export default updateWebhookRoute;
