import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  ErrorResponseSchema,
  EXPECTED,
  WEBHOOK_LIMITS,
  WebhookDeliveryIdSchema,
  WebhookDeliveryPageSchema,
  WebhookDeliverySchema,
  WebhookIdSchema,
} from '@tether/protocol';
import { QueueError } from '@tether/store';
import { deliveryView } from '@tether/store/webhooks';
import { COMMON_ERRORS } from '../schemas.js';
import { endpointOf } from './endpoints.js';
import { EndpointParamsSchema } from './params.js';

const DeliveryParamsSchema = Type.Object({ id: WebhookIdSchema, deliveryId: WebhookDeliveryIdSchema });
const DeliveriesQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: WEBHOOK_LIMITS.pageMaxLimit, default: 20 })),
  cursor: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,16}_whd_[0-9a-z]{26}$',
      [EXPECTED]: "the previous page's nextCursor",
      description: 'nextCursor of the previous page',
    }),
  ),
});

/** `/v1/webhooks/:id/deliveries`: an endpoint's delivery log, and sending a delivery again. */
const webhookDeliveryRoutes: FastifyPluginAsyncTypebox = async (app) => {
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
      await endpointOf(app, request.tenant, request.params.id);
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
      await endpointOf(app, request.tenant, id);
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

export default webhookDeliveryRoutes;
