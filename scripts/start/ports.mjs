// Is a port free to listen on? Asked before anything starts, so that a busy port is named with the
// flag that changes it, rather than found by a process that fails, or by a PING another Redis answers.
import { createServer } from 'node:net';

/** Resolves true when something listens on `host:port` (binding there fails with EADDRINUSE). */
export function portInUse(port, host) {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (error) => {
      if (error.code === 'EADDRINUSE') resolve(true);
      else if (error.code === 'EACCES') reject(new Error(`port ${port} on ${host} needs more privileges`));
      else reject(error);
    });
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(false)));
  });
}

/**
 * The hosts the API binds, as its config decides (apps/api/src/config.ts): loopback without API
 * keys, else HOST or every interface. Loopback is always checked: a listener on every interface
 * holds it too, and the other way round.
 */
export function apiHosts(env) {
  const keyed = (env.TETHER_API_KEYS ?? '').trim() !== '';
  const host = keyed ? env.HOST?.trim() || '0.0.0.0' : '127.0.0.1';
  return [...new Set(['127.0.0.1', host])];
}
