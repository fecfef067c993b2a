#!/usr/bin/env node
// Writes docs/errors.md from every package's error catalog (needs `pnpm build`).
// test/errors-doc.test.ts fails when the document and the catalogs disagree: run this, then commit.
import { writeFileSync } from 'node:fs';
import { API_ERRORS } from '../apps/api/dist/errors.js';
import { WORKER_ERRORS } from '../apps/worker/dist/index.js';
import { AGENT_ERRORS } from '../packages/agent/dist/index.js';
import { CLIENT_ERROR_CODES } from '../packages/client/dist/index.js';
import { CONFIG_ERRORS } from '../packages/config/dist/index.js';
import { MCP_ERRORS } from '../packages/mcp/dist/index.js';
import { OUTBOUND_ERRORS } from '../packages/outbound/dist/index.js';
import { QUEUE_ERRORS } from '../packages/store/dist/index.js';
import { TOOL_ERROR_CODES } from '../packages/tools/dist/index.js';

const CLIENT_DESCRIPTIONS = {
  ERR_CLIENT_CONNECTION: 'The server could not be reached, or the connection broke (CLI exit code 3).',
  ERR_CLIENT_TIMEOUT: 'No response, or no stream data, within the configured time.',
  ERR_CLIENT_BAD_RESPONSE:
    'The server answered with something the contract does not allow (bad JSON, an event without id).',
  ERR_CLIENT_HTTP: 'An HTTP error whose body carried no `{ error: { code } }`.',
  ERR_CLIENT_INVALID_OPTION: 'An option passed to the client is invalid.',
};

const row = (code, status, text) => `| \`${code}\` | ${status ?? ''} | ${text.replaceAll('|', '\\|')} |`;
const section = (title, intro, rows) =>
  `## ${title}\n\n${intro}\n\n| code | HTTP | meaning |\n| --- | --- | --- |\n${rows.join('\n')}\n`;

const sections = [
  section(
    'API (apps/api)',
    'Answers of the HTTP API itself. Every error body is `{ "error": { "code", "message" } }`.',
    Object.entries(API_ERRORS).map(([code, e]) => row(code, e.statusCode, e.description)),
  ),
  section(
    'Runs, questions and the queue (packages/store)',
    'Raised by the run service; the API answers with their HTTP status.',
    Object.entries(QUEUE_ERRORS).map(([code, e]) => row(code, e.statusCode, e.description)),
  ),
  section(
    'Configuration (packages/config)',
    'Raised at start by the API and the workers when their environment is invalid; see [operations.md](operations.md).',
    Object.entries(CONFIG_ERRORS).map(([code, e]) => row(code, e.statusCode, e.description)),
  ),
  section(
    'Calls to tenant-given URLs (packages/outbound)',
    'Webhook endpoints and MCP servers: the rules against SSRF, timeouts and size caps. See [operations.md](operations.md).',
    Object.entries(OUTBOUND_ERRORS).map(([code, e]) => row(code, e.statusCode, e.description)),
  ),
  section(
    'Models and the attempt loop (packages/agent)',
    'A run that fails carries one of these as `error.code`; retryable ones are retried (BullMQ attempts, from the checkpoint) before the run fails. Those with an HTTP status are refused when the run is submitted.',
    Object.entries(AGENT_ERRORS).map(([code, e]) =>
      row(code, e.statusCode, `${e.retryable ? '**Retryable.** ' : ''}${e.description}`),
    ),
  ),
  section(
    'MCP servers (packages/mcp)',
    "A run with `mcpServers` fails with one of these when its servers cannot be used at an attempt's start; a failed call of an MCP tool is a tool error instead (`ERR_TOOL_MCP_*`). See [tools.md](tools.md).",
    Object.entries(MCP_ERRORS).map(([code, e]) =>
      row(code, undefined, `${e.retryable ? '**Retryable.** ' : ''}${e.description}`),
    ),
  ),
  section(
    'The worker (apps/worker)',
    'Given to a run by the worker.',
    Object.entries(WORKER_ERRORS).map(([code, text]) => row(code, undefined, text)),
  ),
  section(
    'Tools (packages/tools)',
    'A tool error never ends a run: the model reads it as the tool result (`ok: false`) and can correct itself. See [tools.md](tools.md).',
    Object.entries(TOOL_ERROR_CODES).map(([code, text]) => row(code, undefined, text)),
  ),
  section(
    'The client (packages/client)',
    'Raised by the SDK and the CLI on the client side; API errors keep the API code. See [client.md](client.md).',
    Object.values(CLIENT_ERROR_CODES).map((code) => row(code, undefined, CLIENT_DESCRIPTIONS[code] ?? '')),
  ),
];

const doc = `# Error codes

Every error Tether raises on purpose has a stable code (\`ERR_<AREA>_<WHAT>\`). This page is generated
from the packages' catalogs by \`node scripts/errors-doc.mjs\`; \`test/errors-doc.test.ts\` keeps the two
in sync.

The patch tool's matcher also answers with result codes (not errors): \`EMPTY_SEARCH\`, \`IDENTICAL\`,
\`NO_MATCH\`, \`AMBIGUOUS\`, \`FUZZY_REPLACE_ALL\`; see [fuzzy-match.md](fuzzy-match.md).

${sections.join('\n')}`;
writeFileSync(new URL('../docs/errors.md', import.meta.url), doc);
console.log('wrote docs/errors.md');
