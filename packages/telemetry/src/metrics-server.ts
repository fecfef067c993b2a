import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** A running metrics server: its port (the one asked for, or the one given for 0) and how to stop it. */
export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/** The port of a metrics server is taken by another process. */
export class MetricsPortInUseError extends Error {
  readonly port: number;
  constructor(port: number, host: string, options?: ErrorOptions) {
    super(`Cannot serve metrics on ${host}:${port}: the port is in use by another process.`, options);
    this.name = 'MetricsPortInUseError';
    this.port = port;
  }
}

/**
 * Serves `registry` as `GET /metrics` (the Prometheus text format) on `port`
 * of `host`, and nothing else: any other path is 404, any other method 405.
 * A plain node:http server, separate from any app. Rejects with
 * {@link MetricsPortInUseError} when the port is taken.
 */
export async function serveMetrics(options: {
  registry: Registry;
  port: number;
  host?: string | undefined;
}): Promise<MetricsServer> {
  const { registry } = options;
  const host = options.host ?? '0.0.0.0';
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('Method not allowed\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (error: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`Could not collect the metrics: ${error}\n`);
      },
    );
  });
  // A scrape holds no connection open for long: keep-alive sockets must not keep a stopping process.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'EADDRINUSE' ? new MetricsPortInUseError(options.port, host, { cause: error }) : error,
      );
    });
    server.listen(options.port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
