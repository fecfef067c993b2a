import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type Static, Type } from '@sinclair/typebox';
import { ErrorResponseSchema } from '@tether/protocol';
import { errorBody } from '../../errors.js';

const OkSchema = Type.Object({ status: Type.Literal('ok') });

/** What one worker said of its `bash` sandbox at start (see the worker's sandbox report). */
const WorkerSandboxSchema = Type.Object({
  id: Type.String(),
  sandbox: Type.Object({
    requested: Type.String({ description: 'TETHER_SANDBOX: bwrap, none or auto' }),
    effective: Type.String({
      description: 'what commands run under: bwrap, none, or unavailable (bwrap asked for but broken)',
    }),
    reason: Type.Optional(Type.String({ description: 'why bwrap is not used, or cannot be' })),
    fix: Type.Optional(Type.String({ description: 'what to do about `reason` (chmod o+x /srv, …)' })),
    bwrap: Type.Optional(Type.String({ description: 'the bwrap found on the host (absent: not installed)' })),
    userNamespace: Type.Optional(Type.Boolean()),
    uid: Type.Optional(Type.Integer({ description: 'the host uid commands run as' })),
    cgroups: Type.String({ description: 'per-command limits: v2, v1, or none (rlimits only)' }),
    cgroupReason: Type.Optional(Type.String()),
  }),
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')], {
    description:
      'degraded: the worker takes jobs, but a part of it runs with less than it should (see problems)',
  }),
  problems: Type.Optional(
    Type.Array(
      Type.Object({
        part: Type.String({
          description:
            'sandbox: bash runs unsandboxed or is refused; spawner: commands start from the worker itself',
        }),
        cause: Type.String(),
        fix: Type.String(),
      }),
    ),
  ),
  seenAt: Type.String({ format: 'date-time' }),
});

type WorkerEntry = Static<typeof WorkerSandboxSchema>;

const ReadySchema = Type.Object({
  status: Type.Literal('ok'),
  workers: Type.Array(WorkerSandboxSchema, {
    description: 'The live workers of this deployment and the sandbox each one runs commands in',
  }),
});

/** How long `/readyz` waits for Redis to answer PING. */
const PING_TIMEOUT_MS = 1_000;
/** A worker that has not refreshed its report for this long is gone (it refreshes every 10 s). */
const WORKER_STALE_MS = 60_000;

/**
 * `/healthz` (the process is up, whatever Redis does) and `/readyz` (it can
 * serve: the Redis breaker is closed, PING is answered, and it is not shutting down).
 */
const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  const options = (operationId: string, summary: string, codes: 'ok' | 'ready') => ({
    config: { auth: 'public' as const, rateLimit: false },
    schema: {
      tags: ['health'],
      operationId,
      summary,
      security: [],
      response: codes === 'ok' ? { 200: OkSchema } : { 200: ReadySchema, 503: ErrorResponseSchema },
    },
  });

  app.get(
    '/healthz',
    options('getLiveness', 'Liveness: always 200 while the process serves', 'ok'),
    async () => ({
      status: 'ok' as const,
    }),
  );

  /** The workers' sandbox reports, the stale ones (workers gone without a goodbye) removed. */
  const liveWorkers = async () => {
    const entries = Object.entries(await app.redis.hgetall(app.keys.workers));
    const now = Date.now();
    const live: WorkerEntry[] = [];
    const stale: string[] = [];
    for (const [id, json] of entries) {
      try {
        const { at, status, problems, ...sandbox } = JSON.parse(json) as { at: number } & Partial<
          Pick<WorkerEntry, 'status' | 'problems'>
        > &
          WorkerEntry['sandbox'];
        if (now - at > WORKER_STALE_MS) stale.push(id);
        else {
          // A worker of an earlier version publishes no status.
          const health =
            status === 'degraded' ? { status, problems: problems ?? [] } : { status: 'ok' as const };
          live.push({ id, ...health, sandbox, seenAt: new Date(at).toISOString() });
        }
      } catch {
        stale.push(id);
      }
    }
    if (stale.length > 0) await app.redis.hdel(app.keys.workers, ...stale).catch(() => undefined);
    return live.sort((a, b) => a.id.localeCompare(b.id));
  };

  app.get(
    '/readyz',
    options(
      'getReadiness',
      "Readiness: 200 when Redis answers PING, with every live worker's sandbox and status (a degraded worker too); else 503",
      'ready',
    ),
    async (_request, reply) => {
      if (closing) return reply.code(503).send(errorBody('ERR_NOT_READY', 'The server is shutting down.'));
      if (!app.breaker.available) {
        const reason = app.breaker.outage?.reason ?? 'not connected yet';
        return reply.code(503).send(errorBody('ERR_NOT_READY', `Redis is not reachable (${reason}).`));
      }
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          app.redis.ping(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('PING timed out')), PING_TIMEOUT_MS);
          }),
        ]);
        return { status: 'ok' as const, workers: await liveWorkers() };
      } catch (error) {
        return reply
          .code(503)
          .send(errorBody('ERR_NOT_READY', `Redis is not reachable: ${(error as Error).message}.`));
      } finally {
        clearTimeout(timer);
      }
    },
  );
};

export default healthRoutes;
