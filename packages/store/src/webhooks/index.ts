export type { WebhookDispatcherOptions } from './webhook-dispatcher.js';
export { answerTokenHash, newAnswerToken, WebhookDispatcher } from './webhook-dispatcher.js';
export type {
  AttemptOutcome,
  DeliveryRecord,
  EndpointRecord,
  PumpJobData,
  Sealer,
  Take,
  TakenDelivery,
  WebhookStoreOptions,
} from './webhook-store.js';
export {
  createWebhookQueue,
  DEFAULT_WEBHOOK_SETTINGS,
  deliveryView,
  pumpJobId,
  WAKE_LEASE_MS,
  WebhookStore,
  webhookView,
} from './webhook-store.js';
