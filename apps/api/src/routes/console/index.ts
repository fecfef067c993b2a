/**
 * The web console (apps/console, built into its dist/) at `/console/`, and
 * `/` sends browsers there.
 *
 * - `/console/assets/*`: the bundle's files, whose names carry a content hash,
 *   so they are cached for a year as immutable;
 * - any other path under `/console/` is the single page's `index.html`
 *   (deep links such as `/console/runs/:id` load on reload), never cached, so
 *   a new build is picked up at once;
 * - every answer carries a strict Content-Security-Policy: scripts and styles
 *   from this origin only, no inline script, `connect-src 'self'`.
 *
 * Without a built console the API still starts: it logs how to build it, and
 * `/console/` answers 404 with that same advice.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';

export interface ConsoleRoutesOptions {
  /** The built console: `index.html` and `assets/`. */
  dir: string;
}

/** The console's Content-Security-Policy. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const NOT_BUILT =
  'The console is not built: run `pnpm build` (it writes apps/console/dist), then restart the API.\n';

function secure(reply: FastifyReply): void {
  reply.header('content-security-policy', CONSOLE_CSP);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
}

const consoleRoutes: FastifyPluginAsync<ConsoleRoutesOptions> = async (app, { dir }) => {
  // Every route here (@fastify/static's included) is public, unlimited and left out of the OpenAPI document.
  app.addHook('onRoute', (options) => {
    options.config = { ...options.config, auth: 'public', rateLimit: false };
    options.schema = { ...options.schema, hide: true };
  });
  app.get('/', async (_request, reply) => reply.redirect('/console/', 302));

  if (!existsSync(join(dir, 'index.html'))) {
    app.log.warn({ dir }, `the console is not served: ${NOT_BUILT.trim()}`);
    const notBuilt = async (_request: unknown, reply: FastifyReply) => {
      secure(reply);
      return reply.code(404).type('text/plain; charset=utf-8').send(NOT_BUILT);
    };
    app.get('/console/', notBuilt);
    app.get('/console/*', notBuilt);
    return;
  }

  await app.register(fastifyStatic, {
    root: join(dir, 'assets'),
    prefix: '/console/assets/',
    index: false,
    immutable: true,
    maxAge: '365d',
    setHeaders: (reply) => secure(reply),
  });

  const page = async (_request: unknown, reply: FastifyReply) => {
    secure(reply);
    reply.header('cache-control', 'no-cache');
    return reply.sendFile('index.html', dir, { cacheControl: false });
  };
  app.get('/console/', page);
  app.get('/console/*', page);
};

export default consoleRoutes;
