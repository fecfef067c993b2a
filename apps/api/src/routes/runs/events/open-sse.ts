import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError } from '../../../errors.js';

/**
 * Takes a slot of the tenant's open event streams (429 `ERR_TOO_MANY_STREAMS`
 * when they are all taken, `hint` saying what to do instead), then takes the
 * response over from Fastify and sends the SSE headers. The caller writes the
 * events and gives the slot back when the stream ends (`app.streams.remove`).
 */
export function openSse(
  app: FastifyInstance,
  reply: FastifyReply,
  tenant: string,
  hint: string,
): ServerResponse {
  if (!app.streams.acquire(tenant)) {
    throw new ApiError(
      'ERR_TOO_MANY_STREAMS',
      `This tenant already has ${app.config.sseMaxPerTenant} open event streams on this server; ${hint}.`,
    );
  }
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
    connection: 'keep-alive',
  });
  res.flushHeaders();
  return res;
}
