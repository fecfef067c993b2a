import { Type } from '@sinclair/typebox';
import { EXPECTED } from '@tether/protocol';
import type { RunRecord } from '@tether/store/runs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { runLinks } from './run-view.js';

/** `Idempotency-Key`: printable ASCII, as Stripe and the IETF draft use it. */
export const IdempotencyHeadersSchema = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x21-\\x7e]+$',
      [EXPECTED]: 'a key of printable ASCII characters, without spaces',
    }),
  ),
});

/**
 * A run accepted, by a submission or a retry: 202 with its links and a read token; or the run an
 * Idempotency-Key already made, said so.
 */
export function accepted(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  run: Pick<RunRecord, 'id' | 'status'>,
  created: boolean,
) {
  const runId = run.id;
  app.metrics.runsSubmitted.inc({ created: String(created) });
  if (!created) reply.header('idempotent-replayed', 'true');
  reply.header('location', runLinks(runId).self);
  return reply.code(202).send({
    id: runId,
    // A delayed run is `scheduled` until its time; any other was created `queued`.
    status: run.status === 'scheduled' ? 'scheduled' : 'queued',
    links: runLinks(runId),
    token: app.readTokens.issue(runId, request.tenant),
  });
}
