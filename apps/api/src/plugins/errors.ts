import { TetherError } from '@tether/protocol';
import { isRedisConnectionError } from '@tether/queue';
import type { FastifyError, FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type ApiErrorCode, errorBody, UNAVAILABLE_MESSAGE, UNAVAILABLE_RETRY_AFTER_S } from '../errors.js';

type ValidationIssue = NonNullable<FastifyError['validation']>[number];

/** Fastify's own errors, by code, as API errors. */
const FASTIFY_CODES: Record<string, ApiErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'ERR_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'ERR_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'ERR_VALIDATION',
  FST_ERR_CTP_INVALID_JSON_BODY: 'ERR_INVALID_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'ERR_INVALID_JSON',
};

/** Other 4xx statuses, by status. */
const STATUS_CODES: Record<number, ApiErrorCode> = {
  400: 'ERR_VALIDATION',
  401: 'ERR_UNAUTHORIZED',
  404: 'ERR_NOT_FOUND',
  408: 'ERR_REQUEST_TIMEOUT',
  413: 'ERR_BODY_TOO_LARGE',
  415: 'ERR_UNSUPPORTED_MEDIA_TYPE',
  429: 'ERR_RATE_LIMITED',
};

/**
 * The problem to report of those Ajv lists. Without a union there is one (two
 * for a bad property name: the name's problem, then `propertyNames`). In a
 * union (`anyOf`) every branch failed: the problem deepest in the body is in
 * the branch the client meant. A replay script of too many turns fails the
 * profile branch at `model` (no field `provider` there) and the replay branch
 * at `model.script` (too many items): the second is the one to tell.
 */
export function mainIssue(issues: readonly ValidationIssue[]): ValidationIssue {
  let main = issues[0] as ValidationIssue;
  let depth = -1;
  for (const issue of issues) {
    const issueDepth = (issue.instancePath ?? '').split('/').length;
    if (issueDepth > depth) {
      main = issue;
      depth = issueDepth;
    }
  }
  return main;
}

/**
 * One validation problem as a sentence naming the field, such as
 * `body.limits.maxSteps must be integer`, or the key, such as
 * `body.metadata key "aaa…" must NOT have more than 128 characters`.
 */
export function describeValidation(issue: ValidationIssue, context: string | undefined): string {
  const params = issue.params as Record<string, unknown>;
  const path = (issue.instancePath ?? '')
    .split('/')
    .filter((part) => part !== '')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
  const field = (extra?: unknown) =>
    [context ?? 'request', ...path, ...(typeof extra === 'string' ? [extra] : [])].join('.');
  // Ajv marks the problems of a property name (`propertyNames`) with the name.
  const key = (issue as { propertyName?: unknown }).propertyName;
  if (typeof key === 'string') {
    const shown = key.length > 40 ? `${key.slice(0, 40)}…` : key;
    return `${field()} key ${JSON.stringify(shown)} ${issue.message ?? 'is invalid'}`;
  }
  switch (issue.keyword) {
    case 'additionalProperties':
      return `${field(params.additionalProperty)} is not a known field`;
    case 'required':
      return `${field(params.missingProperty)} is required`;
    case 'pattern':
      return `${field()} ${issue.message ?? 'is malformed'}`;
    default:
      return `${field()} ${issue.message ?? 'is invalid'}`;
  }
}

/** What a thrown error answers: status, code and a message safe for the client. */
export function classify(
  error: FastifyError | Error,
  request: FastifyRequest,
): { status: number; code: string; message: string } {
  const fastify = error as FastifyError;
  if (Array.isArray(fastify.validation) && fastify.validation.length > 0) {
    return {
      status: 400,
      code: 'ERR_VALIDATION',
      message: describeValidation(mainIssue(fastify.validation), fastify.validationContext),
    };
  }
  if (error instanceof TetherError) {
    const status = error.statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      return { status, code: error.code, message: error.message };
    }
    if (status !== undefined && status >= 500 && status !== 500) {
      return { status, code: error.code, message: error.message };
    }
  } else if (typeof fastify.code === 'string' && fastify.code in FASTIFY_CODES) {
    const code = FASTIFY_CODES[fastify.code] as ApiErrorCode;
    const status = fastify.statusCode ?? 400;
    return { status, code, message: fastify.message };
  } else if (isRedisConnectionError(error)) {
    return { status: 503, code: 'ERR_UNAVAILABLE', message: UNAVAILABLE_MESSAGE };
  } else if (fastify.statusCode !== undefined && fastify.statusCode >= 400 && fastify.statusCode < 500) {
    return {
      status: fastify.statusCode,
      code: STATUS_CODES[fastify.statusCode] ?? 'ERR_VALIDATION',
      message: fastify.message,
    };
  }
  return {
    status: 500,
    code: 'ERR_INTERNAL',
    message: `Internal server error (request ${request.id}).`,
  };
}

/**
 * Every error, and every unmatched route, answers `{ error: { code, message } }`
 * with the status the error carries. Server errors are logged with their stack
 * and answered without it, except a Redis that cannot be reached: that is one
 * outage, reported once by the Redis breaker (which this opens, if it is not
 * yet), and answered 503 `ERR_UNAVAILABLE` with `Retry-After`.
 */
const errorsPlugin: FastifyPluginAsync = async (app) => {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { status, code, message } = classify(error, request);
    if (code === 'ERR_UNAVAILABLE') {
      const server = request.server;
      if (server.hasDecorator('breaker') && server.breaker.available) {
        server.breaker.trip(`a request failed: ${error.message}`);
      }
      request.log.debug({ code, error: error.message }, 'request failed: Redis is unreachable');
      reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S));
    } else if (status >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.debug({ code, message }, 'request refused');
    return reply.code(status).send(errorBody(code, message));
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send(errorBody('ERR_NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}.`)),
  );
};

export default fp(errorsPlugin, { name: 'tether-errors', fastify: '5.x' });
