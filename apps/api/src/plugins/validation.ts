import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import secureJson from 'secure-json-parse';
import { ApiError } from '../errors.js';
import { jsonDeeperThan } from '../json-depth.js';

/**
 * How requests are read:
 * - JSON bodies only (anything else is 415, Fastify's default for an unknown
 *   content type); malformed JSON is 400 `ERR_INVALID_JSON`, and a
 *   `__proto__` or `constructor.prototype` key is 400 `ERR_FORBIDDEN_PROPERTY`,
 *   and a body nested deeper than `TETHER_JSON_MAX_DEPTH` is 400
 *   `ERR_JSON_TOO_DEEP`, found by a scan of the text before it is parsed (see
 *   `jsonDeeperThan`), so no deep body reaches code that recurses over it.
 *   An empty body is no body, so a bodiless POST sent with a JSON content
 *   type is accepted where no body is expected.
 * - Bodies are validated as sent: no coercion, no defaults, no removal of
 *   unknown fields. Path parameters, query strings and headers are strings on
 *   the wire, so they alone are coerced to the schema's types.
 */
const validationPlugin: FastifyPluginAsync = async (app) => {
  const maxDepth = app.config.jsonMaxDepth;
  // verbose: a problem carries its schema, so a value outside a union of literals can list them (errors.ts).
  const common: Options = { removeAdditional: false, allErrors: false, strict: false, verbose: true };
  const bodies = new Ajv({ ...common, coerceTypes: false, useDefaults: false });
  const strings = new Ajv({ ...common, coerceTypes: true, useDefaults: true });
  addFormats.default(bodies);
  addFormats.default(strings);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodies : strings).compile(schema as object),
  );

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    if (jsonDeeperThan(text, maxDepth)) {
      done(
        new ApiError(
          'ERR_JSON_TOO_DEEP',
          `The JSON body nests arrays and objects more than ${maxDepth} levels deep, the most this server accepts (TETHER_JSON_MAX_DEPTH).`,
        ),
        undefined,
      );
      return;
    }
    try {
      done(null, secureJson.parse(text, null, { protoAction: 'error', constructorAction: 'error' }));
    } catch (error) {
      const poisoned = error instanceof SyntaxError && /forbidden prototype property/.test(error.message);
      done(
        poisoned
          ? new ApiError(
              'ERR_FORBIDDEN_PROPERTY',
              'The JSON body has a "__proto__" or "constructor.prototype" key, which is refused.',
            )
          : new ApiError(
              'ERR_INVALID_JSON',
              `The request body is not valid JSON: ${(error as Error).message}`,
            ),
        undefined,
      );
    }
  });
};

export default fp(validationPlugin, { name: 'tether-validation', fastify: '5.x' });
