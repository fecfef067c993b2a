import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import createWebhookRoute from './create.js';
import deleteWebhookRoute from './delete.js';
import webhookDeliveryRoutes from './deliveries.js';
import getWebhookRoute from './get.js';
import listWebhooksRoute from './list.js';
import rotateWebhookSecretRoute from './rotate-secret.js';
import updateWebhookRoute from './update.js';

export { newWebhookSecret } from './endpoints.js';

/**
 * `/v1/webhooks`: a tenant's endpoints, their signing secrets and their
 * deliveries. An endpoint belongs to the caller's tenant: another tenant's id
 * is not found. Its URL is checked against the outbound rules when it is
 * given (https, no credentials, no private address); the address it resolves
 * to is checked again at each delivery. The secret is sealed at rest
 * (`TETHER_SECRETS_KEY`) and shown only at creation and rotation.
 */
const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(createWebhookRoute);
  await app.register(listWebhooksRoute);
  await app.register(getWebhookRoute);
  await app.register(updateWebhookRoute);
  await app.register(deleteWebhookRoute);
  await app.register(rotateWebhookSecretRoute);
  await app.register(webhookDeliveryRoutes);
};

export default webhookRoutes;
