import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import FindMyWay from 'find-my-way';
import { ApiError } from '../errors.js';

/** The order methods are listed in `Allow`. */
const METHOD_ORDER: readonly string[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

const byOrder = (a: string, b: string) => {
  const rank = (method: string) => {
    const index = METHOD_ORDER.indexOf(method);
    return index === -1 ? METHOD_ORDER.length : index;
  };
  return rank(a) - rank(b) || a.localeCompare(b);
};

/** Nothing: the table below only answers whether a method has a route for a path. */
const noop = () => {};

export interface MethodNotAllowedOptions {
  /** As the server's router: `/v1/runs/` is `/v1/runs`. */
  ignoreTrailingSlash: boolean;
}

/**
 * A wrong method on a path that exists answers 405 `ERR_METHOD_NOT_ALLOWED` with `Allow` listing
 * the methods the path has; an unknown path stays 404. Every route added after this plugin is
 * noted (`onRoute`) in a second router of paths by method (find-my-way, as Fastify's own), which
 * is asked only for a request that matched no route: in a global `onRequest` hook, before
 * authentication (which lets unmatched routes through), so a 405 like a 404 needs no key.
 * `@fastify/cors`'s catch-all `OPTIONS *` (registered before, so not in the table) counts as no
 * match: an `OPTIONS` that is not a preflight is answered as any other missing method (405), or,
 * on an unknown path, 404 at once (the catch-all route would otherwise ask for a key first).
 */
const methodNotAllowedPlugin: FastifyPluginAsync<MethodNotAllowedOptions> = async (
  app,
  { ignoreTrailingSlash },
) => {
  const table = FindMyWay({ ignoreTrailingSlash });
  const methods = new Set<FindMyWay.HTTPMethod>();

  app.addHook('onRoute', (route) => {
    const routeMethods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of routeMethods as FindMyWay.HTTPMethod[]) {
      table.on(method, route.url, noop);
      methods.add(method);
    }
  });

  /** The methods that have a route for `path`, in `Allow`'s order. */
  const allowedFor = (path: string): string[] =>
    [...methods].filter((method) => table.find(method, path) !== null).sort(byOrder);

  app.addHook('onRequest', async (request, reply) => {
    const matched = request.routeOptions.url;
    const catchAll = request.method === 'OPTIONS' && matched === '*';
    if (matched !== undefined && !catchAll) return;
    const path = request.url.split('?')[0] ?? '';
    const allowed = allowedFor(path);
    if (allowed.length === 0) {
      // Unmatched, as an unknown path's other methods: 404 to everyone, before authentication.
      if (catchAll) reply.callNotFound();
      return;
    }
    reply.header('allow', allowed.join(', '));
    throw new ApiError(
      'ERR_METHOD_NOT_ALLOWED',
      `${request.method} is not allowed on ${path}; it allows ${allowed.join(', ')} (see Allow).`,
    );
  });
};

export default fp(methodNotAllowedPlugin, { name: 'tether-method-not-allowed', fastify: '5.x' });
