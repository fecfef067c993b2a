// pnpm start's command line: its options, their defaults and its help text.

/** The API's port when neither --port nor PORT is given. */
export const DEFAULT_PORT = 3000;
/**
 * The stack's own redis-server's port when --redis-port is not given: fixed, so that tools
 * (redis-cli, a debugger, a second script) can attach; one above Redis's own 6379, which a
 * system Redis or `docker compose up -d redis` often holds.
 */
export const DEFAULT_REDIS_PORT = 6380;

/** The help text; `home` is the stack's directory (TETHER_HOME). */
export function usage(home) {
  return `Usage: pnpm start [--workers N] [--port P] [--redis-port R]
       (pnpm takes \`pnpm start --help\` for its own: \`pnpm start -- --help\` prints this)

Runs the Tether API and N workers, with a redis-server of its own unless Redis is given.

Options:
  --workers N      worker processes, 1 to 64 (default 1); a crashed one is restarted
                   after 1 s, doubling up to 30 s while it keeps crashing
  --port P         the API's port (default PORT, else ${DEFAULT_PORT})
  --redis-port R   the own redis-server's port (default ${DEFAULT_REDIS_PORT}); not with REDIS_URL
  -h, --help       this help

Redis: REDIS_CLUSTER_NODES (a Redis Cluster's seed nodes) or REDIS_URL if set;
else a local redis-server on 127.0.0.1:R with its data under ${home}/redis.
A port in use is reported before anything starts.
While it runs, ${home}/stack.json holds the API's URL, Redis's URL and the
processes' pids: pnpm demo and pnpm tether read it (TETHER_URL or --url win).
Environment is passed through: the model comes from OPENAI_API_KEY (OPENAI_BASE_URL for
another OpenAI-compatible server) or ANTHROPIC_API_KEY, TETHER_MODEL picks the model (docs/agent.md).
Development settings, unless set: TETHER_SECRETS_KEY from ${home}/secrets.key (made once,
mode 0600), TETHER_WEBHOOK_ALLOW_HTTP=1, TETHER_WEBHOOK_ALLOW_PRIVATE=1, TETHER_ALLOW_REPLAY=1;
production keeps strict defaults (docs/operations.md). LOG_LEVEL=debug shows errors' stacks.
A pnpm start killed with -9 leaves its processes running: the next one stops them.`;
}

/** A command line that cannot run: its message says what to change. */
export class UsageError extends Error {}

/**
 * Parses pnpm start's arguments: `{ help: true }`, or the options with their defaults.
 * A leading `--` (from `pnpm start -- …`) is skipped. Throws {@link UsageError}.
 */
export function parseArgs(argv, env) {
  const options = {
    help: false,
    workers: 1,
    port: env.PORT ? Number(env.PORT) : DEFAULT_PORT,
    redisPort: DEFAULT_REDIS_PORT,
    redisPortGiven: false,
  };
  const args = argv[0] === '--' ? argv.slice(1) : argv;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? arg.split(/=(.*)/s) : [arg, undefined];
    const value = () => {
      if (inline !== undefined) return inline;
      const next = args[++i];
      if (next === undefined) throw new UsageError(`${name} needs a value`);
      return next;
    };
    if (name === '--help' || name === '-h' || name === 'help') return { ...options, help: true };
    if (name === '--workers') options.workers = Number(value());
    else if (name === '--port') options.port = Number(value());
    else if (name === '--redis-port') {
      options.redisPort = Number(value());
      options.redisPortGiven = true;
    } else throw new UsageError(`unknown option ${arg} (try pnpm start -- --help)`);
  }
  if (!Number.isInteger(options.workers) || options.workers < 1 || options.workers > 64) {
    throw new UsageError('--workers must be a whole number from 1 to 64');
  }
  for (const [flag, port] of [
    ['--port', options.port],
    ['--redis-port', options.redisPort],
  ]) {
    if (!Number.isInteger(port) || port < 1 || port > 65_535) {
      throw new UsageError(`${flag} must be a port number from 1 to 65535`);
    }
  }
  if (options.port === options.redisPort) {
    throw new UsageError(`--port and --redis-port are both ${options.port}: give them different ports`);
  }
  return options;
}
