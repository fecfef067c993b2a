/**
 * What the suite's config and the stress's (apps/worker/test/stress/vitest.config.ts) share.
 *
 * Workspace packages resolve to their TypeScript sources in tests (the `source` export condition),
 * so unit tests never need a build. Packages outside the workspace that publish a `source`
 * condition of their own (raw TypeScript, reached through the MCP SDK's client) go through Vite,
 * which compiles it, rather than to Node.
 */
const INLINE = ['@modelcontextprotocol/sdk', 'eventsource', 'eventsource-parser'];

export const shared = {
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'], externalConditions: ['source'] } },
  server: { deps: { inline: INLINE } },
  plugins: [],
};
