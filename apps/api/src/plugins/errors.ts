import { EXPECTED, TetherError } from '@tether/protocol';
import { isRedisConnectionError } from '@tether/store/redis';
import type { FastifyError, FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type ApiErrorCode, errorBody, UNAVAILABLE_MESSAGE, UNAVAILABLE_RETRY_AFTER_S } from '../errors.js';
import { replayScriptProblem } from './replay-problem.js';

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
 * `body.metadata key "aaa…" must NOT have more than 128 characters`. A value
 * outside a union of literals (`anyOf` of `const`s, TypeBox's
 * `Union([Literal(…), …])`) or an `enum` lists the allowed values, read from
 * the other `issues` of the same union.
 */
export function describeValidation(
  issue: ValidationIssue,
  context: string | undefined,
  issues: readonly ValidationIssue[] = [issue],
): string {
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
    const problem = issue.keyword === 'pattern' ? notMatching(issue) : (issue.message ?? 'is invalid');
    return `${field()} key ${JSON.stringify(shown)} ${problem}`;
  }
  switch (issue.keyword) {
    case 'additionalProperties':
      return `${field(params.additionalProperty)} is not a known field`;
    case 'required':
      return `${field(params.missingProperty)} is required`;
    case 'pattern':
      return `${field()} ${notMatching(issue)}`;
    case 'const':
    case 'type': {
      const literals = literalsOfUnion(issue, issues);
      if (literals !== undefined) return `${field()} must be ${oneOf(literals)}`;
      if (issue.keyword === 'const') return `${field()} must be ${oneOf([params.allowedValue])}`;
      return `${field()} ${issue.message ?? 'is invalid'}`;
    }
    case 'enum':
      return `${field()} must be ${oneOf((params.allowedValues as unknown[] | undefined) ?? [])}`;
    default:
      return `${field()} ${issue.message ?? 'is invalid'}`;
  }
}

/**
 * What a value that fails a `pattern` is not, in words: the schema's {@link EXPECTED} (every pattern a
 * request can fail has one), never the regular expression itself.
 */
function notMatching(issue: ValidationIssue): string {
  const schema = (issue as { parentSchema?: Record<string, unknown> }).parentSchema;
  const expected = schema?.[EXPECTED];
  return typeof expected === 'string' ? `is not ${expected}` : 'is malformed';
}

/**
 * The values a union of literals allows, when `issue` is a value outside one:
 * every branch's problem at the same place of the body under the same `anyOf`
 * (Ajv tries each; nested unions included) is a `const` or, for a value of
 * another type, a `type` whose schema is a `const` (Ajv's `verbose` errors
 * carry it). Undefined when a branch is more than a literal.
 */
function literalsOfUnion(issue: ValidationIssue, issues: readonly ValidationIssue[]): unknown[] | undefined {
  const union = UNION_BRANCH.exec(issue.schemaPath)?.[1];
  if (union === undefined) return undefined;
  // By branch: a value of another type fails a branch's `type` and its `const`.
  const values = new Map<string, unknown>();
  for (const one of issues) {
    if (one.instancePath !== issue.instancePath || one.keyword === 'anyOf') continue;
    if (UNION_BRANCH.exec(one.schemaPath)?.[1] !== union) continue;
    const literal = literalOf(one);
    if (literal === undefined) return undefined;
    values.set(one.schemaPath.replace(/\/[^/]+$/, ''), literal.value);
  }
  return values.size > 0 ? [...values.values()] : undefined;
}

/** The value a `const` or `type` problem's schema allows, if that schema is a literal. */
function literalOf(issue: ValidationIssue): { value: unknown } | undefined {
  if (issue.keyword === 'const') return { value: (issue.params as { allowedValue?: unknown }).allowedValue };
  const schema = (issue as { parentSchema?: unknown }).parentSchema;
  if (issue.keyword === 'type' && typeof schema === 'object' && schema !== null && 'const' in schema) {
    return { value: (schema as { const: unknown }).const };
  }
  return undefined;
}

/** A problem inside one or more `anyOf`s: the outermost union's schema path, then the branches. */
const UNION_BRANCH = /^(.*?)(?:\/anyOf\/\d+)+\/(?:const|type)$/;

/** `"a"`, or `one of "a", "b"`. */
function oneOf(values: readonly unknown[]): string {
  const shown = values.map((value) => JSON.stringify(value)).join(', ');
  return values.length === 1 ? shown : `one of ${shown}`;
}

/** The 415 message: what to send, and what was sent. */
function unsupportedMediaType(request: FastifyRequest): string {
  const sent = request.headers['content-type'];
  const what =
    sent === undefined || sent === ''
      ? 'no Content-Type'
      : `Content-Type: ${sent.length > 100 ? `${sent.slice(0, 100)}…` : sent}`;
  return `The request body must be JSON: send Content-Type: application/json (this request sent ${what}).`;
}

/** What a thrown error answers: status, code and a message safe for the client. */
export function classify(
  error: FastifyError | Error,
  request: FastifyRequest,
): { status: number; code: string; message: string } {
  const fastify = error as FastifyError;
  if (Array.isArray(fastify.validation) && fastify.validation.length > 0) {
    const context = fastify.validationContext;
    const replay =
      context === 'body' ? replayScriptProblem(fastify.validation, request.body, context) : undefined;
    if (replay !== undefined) {
      return { status: 400, code: 'ERR_MODEL_REPLAY_SCRIPT_INVALID', message: replay };
    }
    return {
      status: 400,
      code: 'ERR_VALIDATION',
      message: describeValidation(mainIssue(fastify.validation), context, fastify.validation),
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
    if (code === 'ERR_UNSUPPORTED_MEDIA_TYPE')
      return { status, code, message: unsupportedMediaType(request) };
    return { status, code, message: fastify.message };
  } else if (isRedisConnectionError(error)) {
    return { status: 503, code: 'ERR_UNAVAILABLE', message: UNAVAILABLE_MESSAGE };
  } else if (fastify.statusCode !== undefined && fastify.statusCode >= 400 && fastify.statusCode < 500) {
    const code = STATUS_CODES[fastify.statusCode] ?? 'ERR_VALIDATION';
    return {
      status: fastify.statusCode,
      code,
      message: code === 'ERR_UNSUPPORTED_MEDIA_TYPE' ? unsupportedMediaType(request) : fastify.message,
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
