/**
 * MCP servers for tests and benches (not part of the build): the real
 * `@modelcontextprotocol/server-everything`, which no one here wrote, in its
 * Streamable HTTP mode on a free port or as the stdio program an operator
 * would configure; and a small server of our own (the SDK's `Server` over
 * Streamable HTTP) whose tools misbehave on purpose: one never answers, one
 * answers too much.
 */

import { createHash } from 'node:crypto';
import { createServer, type Server as HttpServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { freePort, spawnNode, type TestProcess } from '@tether/testing';

const require = createRequire(import.meta.url);

/** The entry point of server-everything: `node <it> stdio` or `node <it> streamableHttp` (on `PORT`). */
export const EVERYTHING_ENTRY = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');

/**
 * server-everything on a free port of 127.0.0.1: in Streamable HTTP mode (`/mcp`), or in the legacy
 * HTTP+SSE mode (`/sse`), which only a client that falls back to SSE can use.
 */
export async function startEverythingHttp(mode: 'streamableHttp' | 'sse' = 'streamableHttp'): Promise<{
  url: string;
  process: TestProcess;
  stop(): Promise<void>;
}> {
  const port = await freePort();
  const process = spawnNode(EVERYTHING_ENTRY, { PORT: String(port) }, [mode], {
    name: `server-everything (${mode})`,
    killAfterMs: 2_000,
  });
  await process.waitFor(/listening on port|running on port/, 20_000);
  return {
    url: `http://127.0.0.1:${port}/${mode === 'sse' ? 'sse' : 'mcp'}`,
    process,
    async stop() {
      await process.stop();
    },
  };
}

/** What the test server's `whoami` answers for an `X-Secret` header. */
export function secretDigest(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/**
 * A server whose tools misbehave: `hang` never answers, `flood` answers
 * `bytes` characters of text (default 2 MB), `echo` answers its `text`,
 * `whoami` the digest of the `X-Secret` header it got. Each
 * request gets a server of its own (stateless Streamable HTTP, plain JSON
 * answers, as many servers run).
 */
export async function startMisbehavingServer(): Promise<{ url: string; close(): Promise<void> }> {
  const build = () => {
    const server = new Server({ name: 'misbehaving', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        { name: 'hang', description: 'Never answers.', inputSchema: { type: 'object', properties: {} } },
        {
          name: 'flood',
          description: 'Answers a lot of text.',
          inputSchema: { type: 'object', properties: { bytes: { type: 'integer' } } },
        },
        {
          name: 'whoami',
          description: 'Answers sha256(X-Secret header) in hex: the header arrived, and no event shows it.',
          inputSchema: { type: 'object', properties: {} },
        },
        {
          name: 'echo',
          description: 'Answers its text.',
          inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const args = (request.params.arguments ?? {}) as { bytes?: number; text?: string };
      if (request.params.name === 'hang') return new Promise<never>(() => undefined);
      if (request.params.name === 'whoami') {
        const header = extra.requestInfo?.headers['x-secret'];
        return { content: [{ type: 'text', text: secretDigest(String(header ?? '')) }] };
      }
      if (request.params.name === 'flood') {
        return { content: [{ type: 'text', text: 'x'.repeat(args.bytes ?? 2_000_000) }] };
      }
      return { content: [{ type: 'text', text: args.text ?? '' }] };
    });
    return server;
  };
  const http: HttpServer = createServer((req, res) => {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    const server = build();
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    void server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
