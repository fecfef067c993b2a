import { FormatRegistry } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { RunEventSchema, TERMINAL_EVENT_TYPES } from '@tether/protocol';
import { Redis } from 'ioredis';

/** RFC 3339 date-time, as `toISOString()` writes it and the API's schemas (ajv) accept it. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
if (!FormatRegistry.Has('date-time')) {
  FormatRegistry.Set('date-time', (value) => DATE_TIME.test(value) && !Number.isNaN(Date.parse(value)));
}

/** A run event log entry that breaks the event contract, and why. */
export interface EventProblem {
  key: string;
  id: string;
  problem: string;
}

/**
 * How a run's event log is named (see packages/store/src/redis/keys.ts):
 * `<namespace>:run:{<runId>}:events`, or for a session's run
 * `<namespace>:ses:{s_<tag>}:run:<runId>:events`.
 */
const EVENT_LOG = /:run:\{(run_[^}]+)\}:events$|:ses:\{s_[^}]+\}:run:(run_[^:]+):events$/;

/**
 * Reads every run event log in a Redis and checks each event against the
 * protocol's `RunEventSchema` (as the API would serve it: id, runId, type,
 * `at` from the id, data), and that a terminal event, if any, is the last one.
 * The integration suites' global teardown runs it over everything their runs
 * wrote, so an event a script builds by hand cannot drift from the protocol.
 */
export async function auditRunEvents(
  url: string,
  options: { limit?: number } = {},
): Promise<{
  logs: number;
  events: number;
  problems: EventProblem[];
}> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  const problems: EventProblem[] = [];
  let logs = 0;
  let events = 0;
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', '*:run*:events', 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const match = EVENT_LOG.exec(key);
        const runId = match?.[1] ?? match?.[2];
        if (!runId || (await redis.type(key)) !== 'stream') continue;
        logs++;
        const entries = await redis.xrange(key, '-', '+', 'COUNT', options.limit ?? 100_000);
        let ended: string | undefined;
        for (const [id, fields] of entries) {
          events++;
          const values: Record<string, string> = {};
          for (let i = 0; i + 1 < fields.length; i += 2)
            values[fields[i] as string] = fields[i + 1] as string;
          let data: unknown;
          try {
            data = JSON.parse(values.d ?? '');
          } catch {
            problems.push({ key, id, problem: `data is not JSON: ${JSON.stringify(values.d)}` });
            continue;
          }
          const event = {
            id,
            runId,
            type: values.t,
            at: new Date(Number(id.split('-')[0])).toISOString(),
            data,
          };
          if (!Value.Check(RunEventSchema, event)) {
            const first = [...Value.Errors(RunEventSchema, event)].at(-1);
            problems.push({
              key,
              id,
              problem: `${values.t} ${values.d} does not match RunEventSchema${first ? ` (${first.path}: ${first.message})` : ''}`,
            });
          }
          if (ended) problems.push({ key, id, problem: `${values.t} follows the terminal event ${ended}` });
          if ((TERMINAL_EVENT_TYPES as readonly string[]).includes(values.t ?? '')) ended = values.t;
        }
      }
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return { logs, events, problems };
}

/**
 * For a global teardown: audits the run events in each Redis of `urls` (one
 * server, or every master of a cluster) and logs the count; when an event
 * breaks the contract, sets a failing exit code and throws naming the first
 * problems (a teardown that throws is reported but leaves the exit code alone).
 */
export async function checkRunEvents(
  urls: readonly string[],
  options: { quiet?: boolean } = {},
): Promise<void> {
  let [logs, events] = [0, 0];
  const problems: EventProblem[] = [];
  for (const url of urls) {
    const audit = await auditRunEvents(url);
    logs += audit.logs;
    events += audit.events;
    problems.push(...audit.problems);
  }
  if (problems.length > 0) {
    process.exitCode = 1;
    const lines = problems.slice(0, 20).map((p) => `- ${p.key} ${p.id}: ${p.problem}`);
    throw new Error(
      `${problems.length} of ${events} run events break the event contract:\n${lines.join('\n')}`,
    );
  }
  if (!options.quiet) console.log(`event audit: ${events} events of ${logs} runs match RunEventSchema`);
}
