import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { SecretBox } from '@tether/config';
import { checkOutboundUrl } from '@tether/outbound';
import {
  CreateWebhookBodySchema,
  ErrorResponseSchema,
  UpdateWebhookBodySchema,
  WEBHOOK_LIMITS,
  WebhookDeliveryIdSchema,
  WebhookDeliveryPageSchema,
  WebhookDeliverySchema,
  WebhookIdSchema,
  WebhookListSchema,
  WebhookSchema,
  WebhookWithSecretSchema,
} from '@tether/protocol';
import { deliveryView, type EndpointRecord, QueueError, webhookView } from '@tether/queue';
import { ApiError } from '../../errors.js';
import { COMMON_ERRORS } from '../schemas.js';

const EndpointParamsSchema = Type.Object({ id: WebhookIdSchema });
const DeliveryParamsSchema = Type.Object({ id: WebhookIdSchema, deliveryId: WebhookDeliveryIdSchema });
const DeliveriesQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: WEBHOOK_LIMITS.pageMaxLimit, default: 20 })),
  cursor: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,16}_whd_[0-9a-z]{26}$',
      description: 'nextCursor of the previous page',
    }),
  ),
});

/** A new signing secret: `whsec_` and the base64 of 32 random bytes (Standard Webhooks). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const notFound = (id: string) => new QueueError('ERR_WEBHOOK_NOT_FOUND', `No webhook endpoint ${id}.`);

/**
 * `/v1/webhooks`: a tenant's endpoints, their signing secrets and their
 * deliveries. An endpoint belongs to the caller's tenant: another tenant's id
 * is not found. Its URL is checked against the outbound rules when it is
 * given (https, no credentials, no private address); the address it resolves
 * to is checked again at each delivery. The secret is sealed at rest
 * (`TETHER_SECRETS_KEY`) and shown only at creation and rotation.
 */
const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { webhook } = app.config;
  const policy = { allowHttp: webhook.allowHttp, allowPrivate: webhook.allowPrivate };
  const box = (): SecretBox => {
    if (app.config.secrets) return app.config.secrets;
    throw new ApiError(
      'ERR_SECRETS_KEY_MISSING',
      'Webhook endpoints keep a signing secret, and TETHER_SECRETS_KEY is not set: set it (e.g. `openssl rand -base64 32`), the same on every API and worker.',
    );
  };
  const endpointOf = async (tenant: string, id: string): Promise<EndpointRecord> => {
    const endpoint = await app.webhooks.get(tenant, id);
    if (!endpoint) throw notFound(id);
    return endpoint;
  };

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
      const sealer = box();
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
    async (request) => webhookView(await endpointOf(request.tenant, request.params.id)),
  );

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
      return webhookView(await endpointOf(request.tenant, request.params.id));
    },
  );

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
      const sealer = box();
      const secret = newWebhookSecret();
      const { id } = request.params;
      if (!(await app.webhooks.update(request.tenant, id, { secret: sealer.seal(secret) })))
        throw notFound(id);
      return { ...webhookView(await endpointOf(request.tenant, id)), secret };
    },
  );

  app.get(
    '/:id/deliveries',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'listWebhookDeliveries',
        summary: "List a webhook endpoint's deliveries",
        description: `Newest first: each delivery's status, attempts, the last HTTP status or error, and when it is tried next. The log keeps the newest \`TETHER_WEBHOOK_LOG_MAX\` deliveries of an endpoint, an ended one for \`TETHER_WEBHOOK_RETENTION_S\`.`,
        params: EndpointParamsSchema,
        querystring: DeliveriesQuerySchema,
        response: { 200: WebhookDeliveryPageSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => {
      await endpointOf(request.tenant, request.params.id);
      const page = await app.webhooks.deliveries(request.tenant, request.params.id, {
        limit: request.query.limit ?? 20,
        cursor: request.query.cursor,
      });
      return { data: page.deliveries.map(deliveryView), nextCursor: page.nextCursor };
    },
  );

  app.post(
    '/:id/deliveries/:deliveryId/redeliver',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'redeliverWebhookDelivery',
        summary: 'Send a delivery again',
        description:
          "A new delivery of the same message (the same `webhook-id` and payload, so a receiver that deduplicates sees it once), after the run's deliveries still pending to this endpoint. 202 with it. 404 `ERR_WEBHOOK_DELIVERY_NOT_FOUND`; 409 `ERR_WEBHOOK_DISABLED` while the endpoint is disabled.",
        params: DeliveryParamsSchema,
        response: {
          202: WebhookDeliverySchema,
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { id, deliveryId } = request.params;
      await endpointOf(request.tenant, id);
      const result = await app.webhooks.redeliver(request.tenant, id, deliveryId);
      if (result === 'missing') {
        throw new QueueError(
          'ERR_WEBHOOK_DELIVERY_NOT_FOUND',
          `Webhook endpoint ${id} has no delivery ${deliveryId}.`,
        );
      }
      if (result === 'disabled') {
        throw new QueueError(
          'ERR_WEBHOOK_DISABLED',
          `Webhook endpoint ${id} is disabled; enable it with PATCH { "enabled": true } first.`,
        );
      }
      return reply.code(202).send(deliveryView(result));
    },
  );
};

export default webhookRoutes;
