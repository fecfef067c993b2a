import type {
  CreateWebhookBody,
  UpdateWebhookBody,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryPage,
  WebhookList,
  WebhookWithSecret,
} from '@tether/protocol';
import { invalidOption, isRecord, TetherProtocolError } from './errors.js';
import type { RequestOptions, RequestSpec } from './request.js';

/** What the webhooks API needs of the client that owns it. */
export interface WebhookTransport {
  /** One request under the client's retry policy, its JSON body parsed (undefined when empty). */
  json(spec: RequestSpec): Promise<unknown>;
}

/**
 * `client.webhooks`: the tenant's webhook endpoints. Each is sent the run
 * events it subscribes to, signed with the Standard Webhooks scheme (verify
 * with any Standard Webhooks library and the endpoint's `secret`).
 *
 * ```ts
 * const { id, secret } = await client.webhooks.create({ url: 'https://example.com/hooks', events: ['run.failed'] });
 * const { data } = await client.webhooks.deliveries(id);
 * ```
 */
export class TetherWebhooks {
  readonly #transport: WebhookTransport;

  constructor(transport: WebhookTransport) {
    this.#transport = transport;
  }

  /** `POST /v1/webhooks`: the endpoint and its signing secret, which is shown only now. */
  async create(body: CreateWebhookBody, options: RequestOptions = {}): Promise<WebhookWithSecret> {
    // Sent twice, it would make two endpoints: never retried after the request left.
    const result = await this.#send('POST', '/v1/webhooks', options, false, body);
    return withSecret(result, 'POST /v1/webhooks');
  }

  /** `GET /v1/webhooks`: every endpoint of the tenant, oldest first. */
  async list(options: RequestOptions = {}): Promise<WebhookList> {
    const result = await this.#send('GET', '/v1/webhooks', options, true);
    if (isRecord(result) && Array.isArray(result.data)) return result as unknown as WebhookList;
    throw new TetherProtocolError('GET /v1/webhooks answered without a data array');
  }

  /** `GET /v1/webhooks/:id` (`TetherNotFoundError` when there is none). */
  async get(id: string, options: RequestOptions = {}): Promise<Webhook> {
    return endpoint(await this.#send('GET', webhookPath(id), options, true), `GET ${webhookPath(id)}`);
  }

  /** `PATCH /v1/webhooks/:id`: `enabled: true` enables a disabled endpoint again. */
  async update(id: string, body: UpdateWebhookBody, options: RequestOptions = {}): Promise<Webhook> {
    const path = webhookPath(id);
    return endpoint(await this.#send('PATCH', path, options, true, body), `PATCH ${path}`);
  }

  /** `DELETE /v1/webhooks/:id` (`TetherNotFoundError` when there is none). */
  async delete(id: string, options: RequestOptions = {}): Promise<void> {
    // Sent again after a lost connection, a delete that happened would answer 404.
    await this.#send('DELETE', webhookPath(id), options, false);
  }

  /** `POST /v1/webhooks/:id/rotate-secret`: the endpoint with its new secret, shown only now. */
  async rotateSecret(id: string, options: RequestOptions = {}): Promise<WebhookWithSecret> {
    const path = `${webhookPath(id)}/rotate-secret`;
    return withSecret(await this.#send('POST', path, options, false), `POST ${path}`);
  }

  /** `GET /v1/webhooks/:id/deliveries`: newest first; pass `nextCursor` for the next page. */
  async deliveries(
    id: string,
    page: { limit?: number | undefined; cursor?: string | undefined } = {},
    options: RequestOptions = {},
  ): Promise<WebhookDeliveryPage> {
    const path = `${webhookPath(id)}/deliveries`;
    const result = await this.#transport.json({
      method: 'GET',
      path,
      query: { limit: page.limit, cursor: page.cursor },
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.data)) return result as unknown as WebhookDeliveryPage;
    throw new TetherProtocolError(`GET ${path} answered without a data array`);
  }

  /** `POST /v1/webhooks/:id/deliveries/:deliveryId/redeliver`: the new delivery of the same message. */
  async redeliver(id: string, deliveryId: string, options: RequestOptions = {}): Promise<WebhookDelivery> {
    if (typeof deliveryId !== 'string' || deliveryId === '') {
      throw invalidOption('delivery id must be a non-empty string');
    }
    const path = `${webhookPath(id)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`;
    const result = await this.#send('POST', path, options, false);
    if (isRecord(result) && typeof result.id === 'string') return result as unknown as WebhookDelivery;
    throw new TetherProtocolError(`POST ${path} answered without a delivery`);
  }

  #send(
    method: RequestSpec['method'],
    path: string,
    options: RequestOptions,
    idempotent: boolean,
    body?: unknown,
  ): Promise<unknown> {
    return this.#transport.json({
      method,
      path,
      ...(body === undefined ? {} : { body }),
      signal: options.signal,
      idempotent,
    });
  }
}

function webhookPath(id: string): string {
  if (typeof id !== 'string' || id === '') throw invalidOption('webhook id must be a non-empty string');
  return `/v1/webhooks/${encodeURIComponent(id)}`;
}

function endpoint(result: unknown, what: string): Webhook {
  if (isRecord(result) && typeof result.id === 'string' && typeof result.url === 'string') {
    return result as unknown as Webhook;
  }
  throw new TetherProtocolError(`${what} answered without an endpoint`);
}

function withSecret(result: unknown, what: string): WebhookWithSecret {
  const found = endpoint(result, what) as Partial<WebhookWithSecret>;
  if (typeof found.secret === 'string') return found as WebhookWithSecret;
  throw new TetherProtocolError(`${what} answered without the secret`);
}
