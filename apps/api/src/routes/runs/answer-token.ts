import { TetherError } from '@tether/protocol';
import { answerTokenHash } from '@tether/store/webhooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * A step taken with a webhook's answer token (its SHA-256 given to `step`) instead of a key: a
 * token that is not the request's own is a failed authentication, whatever exists at the URL.
 */
export async function withAnswerToken(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
  step: (tokenHash: string) => Promise<void>,
): Promise<void> {
  await step(answerTokenHash(token)).catch((error: unknown) => {
    throw error instanceof TetherError && error.code === 'ERR_ANSWER_TOKEN_INVALID'
      ? app.authFailed(request, reply, error)
      : error;
  });
}
