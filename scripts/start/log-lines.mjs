// pnpm start's terminal: each process's pino JSON lines as one readable line, its own redis-server's
// startup and shutdown chatter left out. The API and the workers log JSON (production keeps it);
// only this printer reads it for people, so the processes log the same here as anywhere else.
//
// - A request is one line: `GET /v1/tools 200 1.4 ms` (its reqId only when it failed, to find the
//   error line that goes with it); `GET /v1/ws websocket upgrade` for a WebSocket.
// - An error is one line: the message and the error's message and code. Its stack stays out of
//   the terminal unless `stacks` is set (pnpm start sets it at LOG_LEVEL=debug or trace).
// - Once the stack stops, only warnings and errors are printed: Ctrl-C leaves one line.

const LEVELS = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const LEVEL_COLORS = { 40: 33, 50: 31, 60: 31 };
const WARN = 40;
/** Fields every record has, or that the label already says. */
const SKIP = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'name', 'workerId', 'instanceId', 'v']);

/** An error as pino serialises it (`err`, or another field holding one). */
function isError(value) {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof value.message === 'string' &&
    typeof value.stack === 'string'
  );
}

function fieldValue(value) {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function milliseconds(ms) {
  return ms < 10 ? `${Math.round(ms * 10) / 10} ms` : `${Math.round(ms)} ms`;
}

/**
 * A pino record as the lines to print (one, or more with its stacks), or undefined when the line
 * is not a pino record. `paint(code, text)` colours; `stacks` adds each error's stack below it.
 */
export function formatRecord(label, line, { paint = (_code, text) => text, stacks = false } = {}) {
  let record;
  try {
    record = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof record !== 'object' || record === null || typeof record.level !== 'number') return undefined;
  const time = new Date(record.time ?? Date.now()).toISOString().slice(11, 23);
  const level = LEVELS[record.level] ?? String(record.level);
  const head = paint(LEVEL_COLORS[record.level] ?? 36, level.padEnd(5));
  let message = record.msg ?? '';
  const fields = [];
  const errors = [];
  const request = typeof record.req?.method === 'string' && typeof record.req?.url === 'string';
  const completed =
    request && (record.msg === 'request completed' || record.msg === 'request errored') && record.res;
  if (completed) {
    const status = record.res.statusCode;
    message = `${record.req.method} ${record.req.url} ${status}`;
    if (typeof record.responseTime === 'number') message += ` ${milliseconds(record.responseTime)}`;
    if (status >= 400 && record.reqId) fields.push(`reqId=${record.reqId}`);
  } else if (request) message = `${record.req.method} ${record.req.url} ${message}`;
  for (const [key, value] of Object.entries(record)) {
    if (SKIP.has(key)) continue;
    if (completed && ['res', 'responseTime', 'reqId'].includes(key)) continue;
    if (request && key === 'req') continue;
    if (isError(value)) {
      errors.push(value);
      const code = typeof value.code === 'string' ? ` (${value.code})` : '';
      // Fastify's own error lines have the error's message as theirs.
      message = value.message === record.msg ? `${message}${code}` : `${message}: ${value.message}${code}`;
      continue;
    }
    fields.push(`${key}=${fieldValue(value)}`);
  }
  const text = fields.length > 0 ? ` ${paint(2, fields.join(' '))}` : '';
  const lines = [`${paint(2, time)} ${label} ${head} ${message}${text}`];
  if (stacks) {
    for (const error of errors)
      lines.push(...error.stack.split('\n').map((frame) => paint(2, `    ${frame}`)));
  }
  return { lines, level: record.level, hasStack: errors.length > 0 };
}

/**
 * What redis-server prints that says nothing to someone running the stack: its start banner, the
 * kernel tunings it would like (memory overcommit, transparent huge pages, the TCP backlog: they
 * matter to a production Redis, see docs/operations.md) and its shutdown. Its other warnings and
 * errors (a full disk, an AOF it cannot open) still show.
 */
const REDIS_NOISE = [
  /oO0OoO0OoO0Oo Redis is starting/,
  /Redis version=/,
  /Configuration loaded/,
  /no config file specified/,
  /Server initialized/,
  /overcommit_memory|Memory overcommit/i,
  /Transparent Huge Pages|THP/,
  /TCP backlog/,
  /Received SIG\w+ scheduling shutdown/,
  /User requested shutdown/,
  /Calling fsync\(\) on the AOF file/,
  /Redis is now ready to exit/,
];

export function isRedisNoise(line) {
  return REDIS_NOISE.some((pattern) => pattern.test(line));
}

/**
 * The printer of the stack's lines: `print(name, line)` formats and writes one line of the process
 * `name` (`tag(name)` is its label), `stopping()` keeps only warnings and errors from then on.
 * `stacks`: errors with their stacks; else the first error without one says how to see them.
 */
export function createPrinter({ tag, paint, stacks, write = console.log }) {
  let quiet = false;
  let hinted = stacks;
  return {
    print(name, line) {
      if (!line.trim()) return;
      if (name === 'redis') {
        if (!isRedisNoise(line)) write(`${tag(name)} ${line}`);
        return;
      }
      const record = formatRecord(tag(name), line, { paint, stacks });
      if (record === undefined) {
        write(`${tag(name)} ${line}`);
        return;
      }
      if (quiet && record.level < WARN) return;
      write(record.lines.join('\n'));
      if (record.hasStack && !hinted) {
        hinted = true;
        write(paint(2, '  (errors print without their stacks: LOG_LEVEL=debug pnpm start shows them)'));
      }
    },
    stopping() {
      quiet = true;
    },
  };
}
