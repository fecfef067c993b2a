/**
 * A remote MCP server that answers with a redirect: Tether never follows it,
 * whichever transport meets it (Streamable HTTP's POST, the legacy SSE
 * transport's GET or its POSTs), so the run's headers never reach the
 * redirect's target. Each server here counts the requests that reach its
 * target path, which must stay at none, and the redirect becomes an error
 * naming the status and the `Location`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { executeTool, type RunContext, type Tool } from '@tether/tools';
import { describe, expect, it } from 'vitest';
import { ListingCache, type McpLimits, McpToolset } from '../src/index.js';

const limits: McpLimits = {
  policy: { allowHttp: true, allowPrivate: true },
  callTimeoutMs: 5_000,
  connectTimeoutMs: 10_000,
  maxResponseBytes: 200_000,
};

const SECRET = 'Bearer the-runs-secret';

/** What reached the target path of a redirect: the method and whether the secret came with it. */
interface TargetHit {
  method: string;
  authorization: string | undefined;
}

/**
 * Where the redirect is met: Streamable HTTP's POST (`streamable`); the legacy
 * SSE transport's GET, after Streamable HTTP's POST was refused (`sse-get`); or
 * the POST of a legacy SSE session whose stream opened (`sse-post`).
 */
type Where = 'streamable' | 'sse-get' | 'sse-post';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/**
 * A server on a free port of 127.0.0.1 that answers `status` with a redirect
 * to its own `/target` (same origin: what the SDK follows by itself) where
 * `where` says, and counts what reaches `/target`. `handle` serves the rest.
 */
async function startRedirectingServer(status: number, where: Where | Handler) {
  const hits: TargetHit[] = [];
  const streams = new Set<ServerResponse>();
  const redirect = (res: ServerResponse, location: string) =>
    res.writeHead(status, { location, 'content-type': 'text/plain' }).end('moved');
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const body = Buffer.concat(chunks).toString('utf8');
      if (url.pathname.startsWith('/target')) {
        hits.push({ method: req.method ?? '', authorization: req.headers.authorization });
        res.writeHead(404).end();
        return;
      }
      if (typeof where === 'function') return where(req, res, body);
      if (where === 'streamable') return redirect(res, '/target');
      if (req.method === 'POST' && url.pathname === '/mcp') {
        // Not a Streamable HTTP server: the client falls back to the legacy SSE transport.
        res.writeHead(405).end();
        return;
      }
      if (where === 'sse-get') return redirect(res, '/target');
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
        res.write('event: endpoint\ndata: /messages?session=s1\n\n');
        streams.add(res);
        res.on('close', () => streams.delete(res));
        return;
      }
      redirect(res, '/target?session=s1');
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    target: `http://127.0.0.1:${port}/target`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        for (const stream of streams) stream.end();
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

function context(): RunContext {
  return {
    runId: 'run_mcp_redirects',
    workspace: '/nonexistent',
    emit: () => undefined,
    signal: new AbortController().signal,
    todos: { get: () => [], set: () => undefined },
    sandbox: 'none',
  };
}

const open = (url: string) =>
  McpToolset.open([{ name: 'moved', url, headers: { Authorization: SECRET } }], {
    limits,
    cache: new ListingCache({ ttlMs: 0 }),
    context: context(),
    taken: [],
  });

/** The error a redirect of `status` to `location` of the server at `at` becomes. */
const redirectRefused = (at: string, status: number, location: string) =>
  `The MCP server at ${at} answered ${status} with a redirect to ${location}; Tether does not follow redirects (the run's headers would go with it). Give the server's final URL.`;

describe('an MCP server that answers with a redirect', () => {
  for (const status of [302, 307, 308]) {
    it(`${status} to Streamable HTTP's POST: refused at the attempt's start, nothing reaches the target`, async () => {
      const server = await startRedirectingServer(status, 'streamable');
      try {
        const error = await open(server.url).then(
          () => undefined,
          (failed: unknown) => failed,
        );
        expect(server.hits).toEqual([]);
        expect(error).toMatchObject({
          code: 'ERR_MCP_SERVER_UNAVAILABLE',
          message: `The MCP server moved could not be reached or listed: ${redirectRefused(server.url, status, server.target)}`,
        });
      } finally {
        await server.close();
      }
    });

    it(`${status} to the legacy SSE transport's GET: refused, nothing reaches the target`, async () => {
      const server = await startRedirectingServer(status, 'sse-get');
      try {
        const error = await open(server.url).then(
          () => undefined,
          (failed: unknown) => failed,
        );
        expect(server.hits).toEqual([]);
        expect(error).toMatchObject({
          code: 'ERR_MCP_SERVER_UNAVAILABLE',
          message: expect.stringContaining(redirectRefused(server.url, status, server.target)),
        });
      } finally {
        await server.close();
      }
    });

    it(`${status} to a legacy SSE session's POST: refused, nothing reaches the target`, async () => {
      const server = await startRedirectingServer(status, 'sse-post');
      try {
        const error = await open(server.url).then(
          () => undefined,
          (failed: unknown) => failed,
        );
        expect(server.hits).toEqual([]);
        const endpoint = new URL('/messages', server.url).href;
        expect(error).toMatchObject({
          code: 'ERR_MCP_SERVER_UNAVAILABLE',
          message: expect.stringContaining(redirectRefused(endpoint, status, server.target)),
        });
      } finally {
        await server.close();
      }
    });
  }

  it('a redirect of a tool call is a tool error for the model, and the call never reaches the target', async () => {
    const build = () => {
      const mcp = new Server({ name: 'moving', version: '1.0.0' }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, async () => ({
        tools: [{ name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
      }));
      mcp.setRequestHandler(CallToolRequestSchema, async () => ({
        content: [{ type: 'text', text: 'echo' }],
      }));
      return mcp;
    };
    // Serves the handshake and the listing; a tool call is answered 307 to the target.
    const server = await startRedirectingServer(307, (req, res, body) => {
      const message = body === '' ? undefined : (JSON.parse(body) as { method?: string });
      if (message?.method === 'tools/call') {
        res.writeHead(307, { location: '/target' }).end();
        return;
      }
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      const mcp = build();
      res.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      void mcp.connect(transport).then(() => transport.handleRequest(req, res, message));
    });
    try {
      const set = await open(server.url);
      try {
        const echo = set.tools.find((tool) => tool.name === 'moved__echo') as Tool;
        const result = await executeTool(echo, JSON.stringify({ text: 'hi' }), {
          callId: 'c1',
          signal: new AbortController().signal,
        });
        expect(server.hits).toEqual([]);
        expect(result).toEqual({
          ok: false,
          code: 'ERR_TOOL_MCP_FAILED',
          content: `The MCP server moved could not carry out moved__echo: ${redirectRefused(server.url, 307, server.target)}`,
        });
      } finally {
        await set.close();
      }
    } finally {
      await server.close();
    }
  });
});
