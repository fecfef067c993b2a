import { existsSync, readFileSync } from 'node:fs';
import { MCP_LIMITS, MCP_SERVER_NAME_PATTERN, type StdioServerConfig } from '@tether/protocol';

/** The most operator servers `TETHER_MCP_SERVERS` may define. */
const MAX_OPERATOR_SERVERS = 64;
const NAME = new RegExp(MCP_SERVER_NAME_PATTERN);
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const KEYS = ['command', 'args', 'env'];
/**
 * Host directories a run's sandbox does not show: bwrap gives each command a
 * private `/tmp` and `/run` (docs/tools.md), so a program kept there is not
 * found once the server starts.
 */
const HIDDEN_IN_SANDBOX = ['/tmp/', '/run/'];

function hiddenInSandbox(path: string): boolean {
  return HIDDEN_IN_SANDBOX.some((dir) => path.startsWith(dir));
}

/**
 * Reads the operator's stdio MCP servers: `path` names a JSON file of
 * `{ "<name>": { "command": "...", "args": ["..."], "env": { "K": "v" } } }`
 * (`args` and `env` optional). Runs start them in their own sandbox, so
 * `command` is looked up there (an absolute path, or a program on the
 * sandbox's `PATH`). Every problem (the file unreadable, not JSON, a bad
 * name, a field of the wrong type, an unknown field) goes to `problem`,
 * naming the server and the field.
 */
export function readMcpServersFile(
  path: string,
  problem: (message: string) => void,
): Record<string, StdioServerConfig> {
  const where = `TETHER_MCP_SERVERS (${path})`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    problem(`${where} could not be read as JSON: ${why}`);
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    problem(
      `${where} must hold a JSON object of servers by name, { "name": { "command": ..., "args": [...] } }`,
    );
    return {};
  }
  const entries = Object.entries(parsed as Record<string, unknown>);
  if (entries.length > MAX_OPERATOR_SERVERS) {
    problem(`${where} defines ${entries.length} servers, more than ${MAX_OPERATOR_SERVERS}`);
    return {};
  }
  const servers: Record<string, StdioServerConfig> = {};
  for (const [name, value] of entries) {
    const at = `${where}: server ${JSON.stringify(name)}`;
    if (name.length > MCP_LIMITS.nameMaxLength || !NAME.test(name)) {
      problem(
        `${at}: a name is 1 to ${MCP_LIMITS.nameMaxLength} letters, digits and -, with single _ between them (${MCP_SERVER_NAME_PATTERN})`,
      );
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problem(`${at} must be an object with "command" (and "args", "env")`);
      continue;
    }
    const fields = value as Record<string, unknown>;
    const unknown = Object.keys(fields).filter((key) => !KEYS.includes(key));
    if (unknown.length > 0) {
      problem(
        `${at}: unknown field ${unknown.map((key) => JSON.stringify(key)).join(', ')} (known: ${KEYS.join(', ')})`,
      );
      continue;
    }
    const { command, args = [], env = {} } = fields;
    if (typeof command !== 'string' || command.trim() === '' || command.includes('\0')) {
      problem(`${at}: "command" must be a non-empty string (the program to start)`);
      continue;
    }
    if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string' && !arg.includes('\0'))) {
      problem(`${at}: "args" must be an array of strings`);
      continue;
    }
    if (typeof env !== 'object' || env === null || Array.isArray(env)) {
      problem(`${at}: "env" must be an object of variable names to strings`);
      continue;
    }
    const badEnv = Object.entries(env as Record<string, unknown>).find(
      ([key, text]) => !ENV_NAME.test(key) || typeof text !== 'string' || text.includes('\0'),
    );
    if (badEnv) {
      problem(`${at}: "env" entry ${JSON.stringify(badEnv[0])} must be a variable name with a string value`);
      continue;
    }
    if (command.includes('/') && !command.startsWith('/')) {
      problem(
        `${at}: "command" ${JSON.stringify(command)} is a relative path, which would be looked up from the run's workspace; give an absolute path or a program on the sandbox's PATH`,
      );
      continue;
    }
    if (hiddenInSandbox(command)) {
      problem(
        `${at}: "command" ${JSON.stringify(command)} is under /tmp or /run, which the run's sandbox replaces with private ones (it would not be found); install the server elsewhere, e.g. under /opt or /usr/local`,
      );
      continue;
    }
    // An argument naming a file of this host under /tmp or /run (a server's script) is as unreachable.
    const hiddenArg = (args as string[]).find((arg) => hiddenInSandbox(arg) && existsSync(arg));
    if (hiddenArg !== undefined) {
      problem(
        `${at}: "args" names ${JSON.stringify(hiddenArg)}, under /tmp or /run, which the run's sandbox replaces with private ones (the server would not find it); move it elsewhere, e.g. under /opt or /usr/local`,
      );
      continue;
    }
    servers[name] = { command, args: args as string[], env: env as Record<string, string> };
  }
  return servers;
}
