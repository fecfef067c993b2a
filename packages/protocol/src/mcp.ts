import { type Static, Type } from '@sinclair/typebox';
import { EXPECTED } from './expected.js';

/**
 * MCP servers as toolsets: a run names servers in `mcpServers`, remote ones
 * (Streamable HTTP, legacy SSE as a fallback) given by URL, registered by the
 * tenant once (`/v1/mcp-servers`), or an operator's stdio server (its name
 * only). Their tools are offered to the model as `<server>__<tool>`.
 */

/** Bounds of `mcpServers` and of `/v1/mcp-servers`; the API checks them at submit and registration. */
export const MCP_LIMITS = {
  /** Servers one run may name. */
  serversPerRun: 8,
  /** Characters of a server's name. */
  nameMaxLength: 32,
  /** Characters of a server's URL. */
  urlMaxLength: 2_048,
  /** Headers of one server (sent with every request to it), their names' and values' characters, and their bytes together. */
  headersMax: 32,
  headerNameMaxLength: 128,
  headerValueMaxLength: 8_192,
  headersMaxBytes: 16_384,
  /** Entries of `allowedTools`, and characters of one (an MCP tool name). */
  allowedToolsMax: 256,
  toolNameMaxLength: 128,
  /** Servers a tenant may register, unless the operator says otherwise (`TETHER_MCP_MAX_SERVERS`). */
  tenantServersDefault: 20,
} as const;

/**
 * A server's name: letters, digits and `-`, with single `_` between them (no
 * `__`: it separates the server from the tool in `<server>__<tool>`), 1 to 32
 * characters.
 */
export const MCP_SERVER_NAME_PATTERN = '^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$';
export const McpServerNameSchema = Type.String({
  minLength: 1,
  maxLength: MCP_LIMITS.nameMaxLength,
  pattern: MCP_SERVER_NAME_PATTERN,
  [EXPECTED]: 'a server name of letters, digits and -, with single _ between them',
});

/** The separator of a server's name and its tool's in the names the model sees. */
export const MCP_TOOL_SEPARATOR = '__';

/** An HTTP header name (an RFC 9110 token). */
export const HTTP_HEADER_NAME_PATTERN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";

/**
 * Headers sent with every request to a server (an `Authorization` token, an
 * API key): secrets, sealed at rest and never shown again. Values are
 * printable, without line breaks.
 */
export const McpHeadersSchema = Type.Record(
  Type.String(),
  Type.String({
    maxLength: MCP_LIMITS.headerValueMaxLength,
    pattern: '^[^\\r\\n\\0]*$',
    [EXPECTED]: 'a header value without line breaks or NUL',
  }),
  {
    maxProperties: MCP_LIMITS.headersMax,
    propertyNames: {
      minLength: 1,
      maxLength: MCP_LIMITS.headerNameMaxLength,
      pattern: HTTP_HEADER_NAME_PATTERN,
      [EXPECTED]: "an HTTP header name (letters, digits and !#$%&'*+.^_`|~-)",
    },
  },
);
export type McpHeaders = Static<typeof McpHeadersSchema>;

/** The server's tools a run may use (their MCP names); left out: every tool. */
export const McpAllowedToolsSchema = Type.Array(
  Type.String({ minLength: 1, maxLength: MCP_LIMITS.toolNameMaxLength }),
  { maxItems: MCP_LIMITS.allowedToolsMax, uniqueItems: true },
);

export const McpServerUrlSchema = Type.String({ minLength: 1, maxLength: MCP_LIMITS.urlMaxLength });

/**
 * One entry of `CreateRunBody.mcpServers`: with a `url`, a remote server for
 * this run (named `name` here); with only a `name` (and `allowedTools`), a
 * server the tenant registered, or else an operator's stdio server of that
 * name.
 */
export const McpServerRefSchema = Type.Object(
  {
    name: McpServerNameSchema,
    url: Type.Optional(McpServerUrlSchema),
    headers: Type.Optional(McpHeadersSchema),
    allowedTools: Type.Optional(McpAllowedToolsSchema),
  },
  { additionalProperties: false },
);
export type McpServerRef = Static<typeof McpServerRefSchema>;

/**
 * An entry of `mcpServers` as a run's stored spec holds it: the headers
 * sealed (`SecretBox`), never in the clear.
 */
export interface SealedMcpServerRef {
  name: string;
  url?: string | undefined;
  /** The headers as JSON, sealed. */
  sealedHeaders?: string | undefined;
  headers?: never;
  allowedTools?: string[] | undefined;
}

/** `POST /v1/mcp-servers` body: a remote server the tenant's runs may name. */
export const CreateMcpServerBodySchema = Type.Object(
  {
    name: McpServerNameSchema,
    url: McpServerUrlSchema,
    headers: Type.Optional(McpHeadersSchema),
    allowedTools: Type.Optional(McpAllowedToolsSchema),
  },
  { additionalProperties: false },
);
export type CreateMcpServerBody = Static<typeof CreateMcpServerBodySchema>;

/** A registered server, as the API shows it: its headers' names, never their values. */
export const McpServerSchema = Type.Object({
  name: Type.String(),
  url: Type.String(),
  headerNames: Type.Array(Type.String()),
  allowedTools: Type.Optional(Type.Array(Type.String())),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type McpServer = Static<typeof McpServerSchema>;

/** `GET /v1/mcp-servers`. */
export const McpServerListSchema = Type.Object({
  data: Type.Array(McpServerSchema),
  /** How many the tenant may register. */
  maxCount: Type.Integer({ minimum: 0 }),
  /** The names of the operator's stdio servers, which a run may name too. */
  operatorServers: Type.Array(Type.String()),
});
export type McpServerList = Static<typeof McpServerListSchema>;

/** An operator's stdio server (`TETHER_MCP_SERVERS`): the program a run starts in its sandbox. */
export interface StdioServerConfig {
  command: string;
  args: string[];
  env: Record<string, string>;
}
