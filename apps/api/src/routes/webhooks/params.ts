import { Type } from '@sinclair/typebox';
import { WebhookIdSchema } from '@tether/protocol';

export const EndpointParamsSchema = Type.Object({ id: WebhookIdSchema });
