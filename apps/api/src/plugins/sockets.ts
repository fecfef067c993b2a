import websocket from '@fastify/websocket';
import { WS_CLOSE_CODES } from '@tether/protocol';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiConfig } from '../config.js';
import type { GatewaySocket } from '../routes/ws/gateway-socket.js';
import { StreamRegistry } from './streams.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The open gateway WebSockets of this process: the per-tenant cap, the heartbeat, the end at shutdown. */
    sockets: StreamRegistry<GatewaySocket>;
  }
}

/** How long shutdown waits for clients to answer the close of their sockets. */
const CLOSE_WAIT_MS = 2_000;

export interface SocketsPluginOptions {
  config: Readonly<ApiConfig>;
}

/**
 * WebSockets (`@fastify/websocket`, on `ws`): frames up to
 * `TETHER_WS_MAX_FRAME_BYTES` (a bigger one closes the socket with 1009, as
 * `ws` does past `maxPayload`), and the registry of the gateway's sockets,
 * which pings each every `TETHER_WS_HEARTBEAT_MS` and closes them all with
 * 1001 when the server closes.
 */
const socketsPlugin: FastifyPluginAsync<SocketsPluginOptions> = async (app, { config }) => {
  const registry = new StreamRegistry<GatewaySocket>({
    maxPerTenant: config.wsMaxPerTenant,
    heartbeatMs: config.wsHeartbeatMs,
  });
  app.decorate('sockets', registry);
  await app.register(websocket, {
    options: { maxPayload: config.wsMaxFrameBytes, perMessageDeflate: false },
    // A socket's errors (a frame over the limit, a peer gone) are the client's: `ws` closes it
    // with the right code, or its `close` follows; only a socket still open is cut here.
    errorHandler: (error, socket, request) => {
      request.log.info({ err: error }, 'websocket error');
      if (socket.readyState === socket.OPEN) socket.terminate();
    },
    // Every socket is closed with 1001 (clients reconnect, elsewhere, and subscribe with `after`);
    // those whose peer has not answered the close within CLOSE_WAIT_MS are cut.
    async preClose() {
      registry.close();
      const server = app.websocketServer;
      for (const client of server.clients) {
        // Sockets not in the registry: refused at the cap, or closing already.
        if (client.readyState === client.OPEN) client.close(WS_CLOSE_CODES.shutdown, 'server shutting down');
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)))]);
      clearTimeout(timer);
      for (const client of server.clients) client.terminate();
    },
  });
};

export default fp(socketsPlugin, { name: 'tether-sockets', fastify: '5.x' });
