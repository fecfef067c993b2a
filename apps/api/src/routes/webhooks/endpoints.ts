import { randomBytes } from 'node:crypto';
import type { SecretBox } from '@tether/config';
import type { OutboundPolicy } from '@tether/outbound';
import { QueueError } from '@tether/store';
import type { EndpointRecord } from '@tether/store/webhooks';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../errors.js';

/** A new signing secret: `whsec_` and the base64 of 32 random bytes (Standard Webhooks). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export const notFound = (id: string) => new QueueError('ERR_WEBHOOK_NOT_FOUND', `No webhook endpoint ${id}.`);

/** The outbound rules an endpoint's URL is checked against when it is given. */
export function outboundPolicy(app: FastifyInstance): OutboundPolicy {
  const { webhook } = app.config;
  return { allowHttp: webhook.allowHttp, allowPrivate: webhook.allowPrivate };
}

/** The box that seals signing secrets at rest; 503 `ERR_SECRETS_KEY_MISSING` without `TETHER_SECRETS_KEY`. */
export function secretBox(app: FastifyInstance): SecretBox {
  if (app.config.secrets) return app.config.secrets;
  throw new ApiError(
    'ERR_SECRETS_KEY_MISSING',
    'Webhook endpoints keep a signing secret, and TETHER_SECRETS_KEY is not set: set it (e.g. `openssl rand -base64 32`), the same on every API and worker.',
  );
}

/** The tenant's endpoint `id`, or 404 `ERR_WEBHOOK_NOT_FOUND` (another tenant's is not found). */
export async function endpointOf(app: FastifyInstance, tenant: string, id: string): Promise<EndpointRecord> {
  const endpoint = await app.webhooks.get(tenant, id);
  if (!endpoint) throw notFound(id);
  return endpoint;
}
