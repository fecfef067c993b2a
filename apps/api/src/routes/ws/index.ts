import { Type } from '@sinclair/typebox';
import { WS_CLOSE_CODES } from '@tether/protocol';
import type { FastifyPluginAsync } from 'fastify';
import { onSubscriberResync } from '../../plugins/streams.js';
import { EventFrames } from './event-frames.js';
import { GatewaySocket } from './gateway-socket.js';

/**
 * `GET /v1/ws`: the live gateway. The upgrade authenticates with a bearer key
 * or `?token=<session token>`; a failure is accepted and closed with 1008
 * (browsers see nothing else), and counts toward the failed-authentication
 * limit as any other. Past `TETHER_WS_MAX_PER_TENANT` sockets of the tenant on
 * this process, a new one is closed with 1013. See docs/api.md for the frames.
 */
const wsRoutes: FastifyPluginAsync = async (app) => {
  const eventFrames = new EventFrames();
  onSubscriberResync(app, () => {
    if (app.sockets.size === 0) return;
    app.log.warn(
      { sockets: app.sockets.size },
      'event subscriber reconnected: WebSockets resume from the log',
    );
    for (const socket of app.sockets.all()) {
      void socket.resync().catch((error: unknown) => {
        app.log.warn({ err: error }, 'a WebSocket could not resume');
        socket.end('error');
      });
    }
  });

  app.get(
    '/',
    {
      websocket: true,
      exposeHeadRoute: false,
      config: { auth: 'websocket' },
      schema: {
        querystring: Type.Object({
          token: Type.Optional(Type.String({ maxLength: 300, description: 'A session token' })),
        }),
      },
    },
    (ws, request) => {
      if (request.authRefused) {
        ws.close(
          WS_CLOSE_CODES.unauthorized,
          request.authRefused === 'rate_limited'
            ? 'too many failed authentications from this address'
            : 'authentication failed: a bearer API key, or ?token=<session token>',
        );
        return;
      }
      if (!app.sockets.acquire(request.tenant)) {
        ws.close(
          WS_CLOSE_CODES.tryAgainLater,
          `this tenant has ${app.config.wsMaxPerTenant} sockets on this server already`,
        );
        return;
      }
      const socket = new GatewaySocket({
        app,
        ws,
        request,
        eventFrames,
        onEnd: (ended, why) => app.sockets.remove(ended, why),
      });
      app.sockets.add(socket);
      socket.start();
    },
  );
};

export default wsRoutes;
