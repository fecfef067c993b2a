import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorResponseSchema, WebhookWithSecretSchema } from '@tether/protocol';
import { webhookView } from '@tether/store/webhooks';
import { COMMON_ERRORS } from '../schemas.js';
import { endpointOf, newWebhookSecret, notFound, secretBox } from './endpoints.js';
import { EndpointParamsSchema } from './params.js';

/** `POST /v1/webhooks/:id/rotate-secret`: a new signing secret, shown only now. */
const rotateWebhookSecretRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/:id/rotate-secret',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'rotateWebhookSecret',
        summary: "Rotate a webhook endpoint's signing secret",
        description:
          'A new secret signs every attempt from now on (retries of earlier deliveries included); the old one signs nothing more. 200 with the endpoint and its new `secret`, shown only now.',
        params: EndpointParamsSchema,
        response: {
          200: WebhookWithSecretSchema,
          404: ErrorResponseSchema,
          503: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request) => {
      const sealer = secretBox(app);
      const secret = newWebhookSecret();
      const { id } = request.params;
      if (!(await app.webhooks.update(request.tenant, id, { secret: sealer.seal(secret) })))
        throw notFound(id);
      return { ...webhookView(await endpointOf(app, request.tenant, id)), secret };
    },
  );
};

export default rotateWebhookSecretRoute;
