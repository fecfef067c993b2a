import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { checkOutboundUrl } from '@tether/outbound';
import { CreateWebhookBodySchema, ErrorResponseSchema, WebhookWithSecretSchema } from '@tether/protocol';
import { QueueError } from '@tether/store';
import { webhookView } from '@tether/store/webhooks';
import { COMMON_ERRORS } from '../schemas.js';
import { newWebhookSecret, outboundPolicy, secretBox } from './endpoints.js';

/** `POST /v1/webhooks`: add an endpoint; its secret is shown only now. */
const createWebhookRoute: FastifyPluginAsyncTypebox = async (app) => {
  const { webhook } = app.config;
  const policy = outboundPolicy(app);

  app.post(
    '/',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'createWebhook',
        summary: 'Add a webhook endpoint',
        description: `The events to send (${'`*`'} for all) are POSTed to \`url\`, signed with the Standard Webhooks scheme. 201 with the endpoint and its \`secret\` (\`whsec_…\`), shown only now. 400 \`ERR_URL_REFUSED\` for a URL the outbound rules refuse; 409 \`ERR_WEBHOOK_LIMIT\` past \`TETHER_WEBHOOK_MAX_ENDPOINTS\`; 503 \`ERR_SECRETS_KEY_MISSING\` without \`TETHER_SECRETS_KEY\`.`,
        body: CreateWebhookBodySchema,
        response: {
          201: WebhookWithSecretSchema,
          409: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          503: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const sealer = secretBox(app);
      const { url, events, description } = request.body;
      checkOutboundUrl(url, policy);
      const secret = newWebhookSecret();
      const created = await app.webhooks.create(request.tenant, {
        url,
        events,
        description,
        secret: sealer.seal(secret),
      });
      if (created === 'limit') {
        throw new QueueError(
          'ERR_WEBHOOK_LIMIT',
          `This tenant has ${webhook.maxEndpoints} webhook endpoints already (TETHER_WEBHOOK_MAX_ENDPOINTS); delete one first.`,
        );
      }
      reply.header('location', `/v1/webhooks/${created.id}`);
      return reply.code(201).send({ ...webhookView(created), secret });
    },
  );
};

export default createWebhookRoute;
