import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, type TestProcess, testRedisUrl, uniquePrefix } from '@tether/testing';
import { startStack as startProcesses } from '@tether/testing/scripts';

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

export async function startStack(name: string, env: Record<string, string> = {}): Promise<Stack> {
  const workspaceRoot = await mkdtemp(join(tmpdir(), `tether-${name}-`));
  const port = await freePort();
  const processes = await startProcesses({
    redis: testRedisUrl(),
    port,
    env: {
      TETHER_QUEUE_PREFIX: uniquePrefix(name),
      TETHER_WORKSPACE_ROOT: workspaceRoot,
      TETHER_ALLOW_REPLAY: '1',
      TETHER_SANDBOX: 'none',
      LOG_LEVEL: 'info',
      ...env,
    },
    apiEnv: {
      HOST: '127.0.0.1',
      TETHER_API_KEYS: `acme:${API_KEY}`,
      TETHER_SSE_HEARTBEAT_MS: '1000',
    },
  }).catch(async (error: unknown) => {
    await rm(workspaceRoot, { recursive: true, force: true });
    throw error;
  });
  const [api, worker] = processes.processes as [TestProcess, TestProcess];
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    workspaceRoot,
    api,
    worker,
    async stop() {
      await processes.stop();
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
