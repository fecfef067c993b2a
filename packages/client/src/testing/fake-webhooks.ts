/**
 * The webhook routes of the fake API (`/v1/webhooks`), in memory: enough of
 * the contract for the SDK and the CLI (201 with the secret, the list, 404,
 * PATCH, DELETE, rotation, a page of deliveries, a redelivery). Deliveries
 * are seeded by the test (`deliveries`). Test-only.
 */
import type { ServerResponse } from 'node:http';
import type { Webhook, WebhookDelivery } from '@tether/protocol';

export class FakeWebhooks {
  /** Endpoints by id, with their tenant. */
  readonly endpoints = new Map<string, Webhook & { tenant: string }>();
  /** Deliveries by endpoint id, newest first. */
  readonly deliveries = new Map<string, WebhookDelivery[]>();
  #seq = 0;

  /** Answers a webhook route (`parts` after `v1/webhooks`), or returns false for another route. */
  handle(
    method: string,
    parts: readonly string[],
    url: URL,
    body: unknown,
    tenant: string,
    res: ServerResponse,
  ): boolean {
    const [id, action, deliveryId, again] = parts;
    const secret = () => `whsec_${Buffer.alloc(32, ++this.#seq).toString('base64')}`;
    const view = ({ tenant: _, ...hook }: Webhook & { tenant: string }) => hook;
    if (id === undefined) {
      if (method === 'GET') {
        const data = [...this.endpoints.values()].filter((e) => e.tenant === tenant).map(view);
        send(res, 200, { data });
        return true;
      }
      if (method !== 'POST') return false;
      const { url: target, events, description } = body as Webhook;
      const hook = {
        id: `whk_${String(++this.#seq).padStart(26, '0')}`,
        url: target,
        events,
        ...(description ? { description } : {}),
        enabled: true,
        createdAt: new Date(Date.UTC(2025, 0, 1)).toISOString(),
        tenant,
      };
      this.endpoints.set(hook.id, hook);
      send(res, 201, { ...view(hook), secret: secret() });
      return true;
    }
    const hook = this.endpoints.get(id);
    if (!hook || hook.tenant !== tenant) {
      send(res, 404, { error: { code: 'ERR_WEBHOOK_NOT_FOUND', message: `No webhook endpoint ${id}.` } });
      return true;
    }
    if (action === undefined && method === 'GET') send(res, 200, view(hook));
    else if (action === undefined && method === 'PATCH') {
      Object.assign(hook, body);
      send(res, 200, view(hook));
    } else if (action === undefined && method === 'DELETE') {
      this.endpoints.delete(id);
      res.writeHead(204).end();
    } else if (action === 'rotate-secret' && method === 'POST')
      send(res, 200, { ...view(hook), secret: secret() });
    else if (action === 'deliveries' && deliveryId === undefined && method === 'GET') {
      const all = this.deliveries.get(id) ?? [];
      const limit = Number(url.searchParams.get('limit') ?? '20');
      const offset = Number(url.searchParams.get('cursor') ?? '0');
      const data = all.slice(offset, offset + limit);
      send(res, 200, { data, nextCursor: offset + limit < all.length ? String(offset + limit) : null });
    } else if (action === 'deliveries' && again === 'redeliver' && method === 'POST') {
      const original = (this.deliveries.get(id) ?? []).find((d) => d.id === deliveryId);
      if (!original) {
        send(res, 404, {
          error: { code: 'ERR_WEBHOOK_DELIVERY_NOT_FOUND', message: `No delivery ${deliveryId}.` },
        });
      } else {
        const copy = {
          ...original,
          id: `whd_${String(++this.#seq).padStart(26, '0')}`,
          status: 'pending' as const,
          attempts: 0,
          redeliveryOf: original.id,
        };
        this.deliveries.get(id)?.unshift(copy);
        send(res, 202, copy);
      }
    } else return false;
    return true;
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
