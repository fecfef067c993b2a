import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, spawnNode, type TestProcess, testRedisUrl, uniquePrefix } from '@tether/testing';

const API_MAIN = fileURLToPath(new URL('../../../apps/api/dist/server.js', import.meta.url));
const WORKER_MAIN = fileURLToPath(new URL('../../../apps/worker/dist/main.js', import.meta.url));

export const API_KEY = 'sk_test_client_e2e';

/** A real API process and worker process on the test Redis, with their own prefix. */
export interface Stack {
  baseUrl: string;
  port: number;
  workspaceRoot: string;
  api: TestProcess;
  worker: TestProcess;
  stop(): Promise<void>;
}

export async function startStack(name: string): Promise<Stack> {
  const workspaceRoot = await mkdtemp(join(tmpdir(), `tether-${name}-`));
  const port = await freePort();
  const env = {
    REDIS_URL: testRedisUrl(),
    TETHER_QUEUE_PREFIX: uniquePrefix(name),
    TETHER_WORKSPACE_ROOT: workspaceRoot,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_SANDBOX: 'none',
    LOG_LEVEL: 'info',
  };
  const worker = spawnNode(WORKER_MAIN, env);
  const api = spawnNode(API_MAIN, {
    ...env,
    HOST: '127.0.0.1',
    PORT: String(port),
    TETHER_API_KEYS: `acme:${API_KEY}`,
    TETHER_SSE_HEARTBEAT_MS: '1000',
  });
  await Promise.all([worker.waitFor(/"msg":"worker ready"/), api.waitFor(/Server listening/)]);
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    workspaceRoot,
    api,
    worker,
    async stop() {
      await Promise.all([api.stop(), worker.stop()]);
      await rm(workspaceRoot, { recursive: true, force: true });
    },
  };
}

/** A TCP proxy in front of the API whose open connections can be cut, to test reconnection. */
export async function startCuttableProxy(targetPort: number): Promise<{
  url: string;
  cutAll(): number;
  connections(): number;
  close(): Promise<void>;
}> {
  const open = new Set<Socket>();
  let total = 0;
  const server: Server = createServer((client) => {
    total++;
    const upstream = connect(targetPort, '127.0.0.1');
    open.add(client);
    open.add(upstream);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    cutAll() {
      const count = open.size;
      for (const socket of open) socket.destroy();
      open.clear();
      return count;
    },
    connections: () => total,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
