// What pnpm start sets for development that production leaves strict: a secrets key of the stack's
// own (webhook signing secrets and MCP server headers are stored sealed), and webhooks and MCP
// servers at http and loopback targets (a receiver or a server on this machine). A variable the user set is never overridden. The
// production entry points (apps/api/src/server.ts, apps/worker/src/main.ts, compose, Kubernetes)
// set none of this: there, the same features answer 503 until an operator gives a key.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The stack's secrets key file under its home (TETHER_HOME). */
export function secretsKeyPath(home) {
  return join(home, 'secrets.key');
}

/** A key as packages/config reads TETHER_SECRETS_KEY: 32 bytes, base64 or hex. */
function isKey(text) {
  if (/^[0-9a-f]{64}$/i.test(text)) return true;
  return /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) && Buffer.from(text, 'base64').length === 32;
}

/**
 * The key in `path`, made (32 random bytes, base64, mode 0600) when there is none. Two starts
 * making it at once both end with the one that was written first. Throws, naming the file, when
 * it holds something else than a key.
 */
export function readOrCreateSecretsKey(path) {
  try {
    writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
  }
  const key = readFileSync(path, 'utf8').trim();
  if (!isKey(key)) {
    throw new Error(
      `${path} is not a secrets key (32 bytes, base64 or hex). Remove it to have a new one made: what its key sealed (webhook signing secrets, MCP server headers) can then no longer be opened`,
    );
  }
  return key;
}

const set = (env, name) => (env[name] ?? '').trim() !== '';

/**
 * Lets `what` go to http:// URLs and loopback and private addresses (a receiver or a server on this
 * machine), through `<prefix>_ALLOW_HTTP` and `<prefix>_ALLOW_PRIVATE`, each unless the user set it:
 * sets them in `vars`, and answers the banner's line (none when the user set both).
 */
function allowLocalTargets(env, vars, what, prefix) {
  const http = !set(env, `${prefix}_ALLOW_HTTP`);
  const loopback = !set(env, `${prefix}_ALLOW_PRIVATE`);
  if (http) vars[`${prefix}_ALLOW_HTTP`] = '1';
  if (loopback) vars[`${prefix}_ALLOW_PRIVATE`] = '1';
  if (!http && !loopback) return undefined;
  const targets = [http && 'http:// URLs', loopback && 'loopback and private addresses'].filter(Boolean);
  const names = [http && `${prefix}_ALLOW_HTTP=1`, loopback && `${prefix}_ALLOW_PRIVATE=1`].filter(Boolean);
  return `${what} may go to ${targets.join(' and to ')} (${names.join(', ')})`;
}

/**
 * The development settings of a stack whose directory is `home`: the variables to give the API and
 * the workers (only those the user did not set), and the banner's lines on them (none when the
 * user set them all). `paint(code, text)` colours the lines.
 */
export function developmentSettings(home, env, paint = (_code, text) => text) {
  const vars = {};
  const lines = [];
  if (!set(env, 'TETHER_SECRETS_KEY')) {
    const path = secretsKeyPath(home);
    vars.TETHER_SECRETS_KEY = readOrCreateSecretsKey(path);
    lines.push(`secrets key: ${path} (TETHER_SECRETS_KEY), never printed`);
  }
  for (const [what, prefix] of [
    ['webhooks', 'TETHER_WEBHOOK'],
    ['MCP server connections', 'TETHER_MCP'],
  ]) {
    const line = allowLocalTargets(env, vars, what, prefix);
    if (line) lines.push(line);
  }
  if (!set(env, 'TETHER_ALLOW_REPLAY')) {
    vars.TETHER_ALLOW_REPLAY = '1';
    lines.push('runs may use the scripted replay model (TETHER_ALLOW_REPLAY=1, for pnpm demo)');
  }
  if (lines.length === 0) return { vars, banner: [] };
  return {
    vars,
    banner: [
      `  ${paint(33, 'development settings')} ${paint(2, '(production keeps strict defaults: docs/operations.md)')}`,
      ...lines.map((line) => paint(2, `    ${line}`)),
    ],
  };
}
