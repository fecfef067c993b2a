// A long run for the console's browser test and bench:console: events appended straight to a run's
// log with @tether/store's RunStore (no model turns), so that thousands of them take a second.
// Plain JavaScript (with long-run.d.mts), so that bench/console.bench.mjs imports it as it is.

/** How many events the long run is given. */
export const LONG_RUN_EVENTS = 5_000;

/**
 * The events of a long run's steps, `count` in all: per step an assistant message, a `read_file`
 * call and its result (some of them multi-line, so that rows differ in height), and every 25th
 * step a todo update; a usage every 50th.
 */
export function longRunEvents(count = LONG_RUN_EVENTS) {
  const events = [];
  for (let step = 1; events.length < count; step++) {
    const callId = `call_long_${step}`;
    const path = `src/module-${step}.ts`;
    events.push({
      type: 'message',
      data: {
        role: 'assistant',
        content: `Step ${step}: reading ${path}.`,
        toolCalls: [{ id: callId, name: 'read_file', arguments: JSON.stringify({ path }) }],
      },
    });
    events.push({
      type: 'tool.call',
      data: { callId, name: 'read_file', arguments: JSON.stringify({ path }) },
    });
    const lines = step % 3 === 0 ? 6 : 1;
    const content = Array.from(
      { length: lines },
      (_, i) => `${i + 1}\texport const value${i} = ${step};`,
    ).join('\n');
    events.push({ type: 'tool.result', data: { callId, name: 'read_file', ok: true, content } });
    if (step % 25 === 0) {
      events.push({
        type: 'todo.updated',
        data: { todos: [{ id: 't1', content: `Read module ${step}`, status: 'completed' }] },
      });
    }
    if (step % 50 === 0) {
      events.push({
        type: 'usage',
        data: { inputTokens: step * 10, outputTokens: step, totalTokens: step * 11 },
      });
    }
  }
  return events.slice(0, count);
}

/** Appends {@link longRunEvents} to `runId`'s log through `store` (a RunStore), 500 per call. */
export async function appendLongRun(store, runId, count = LONG_RUN_EVENTS) {
  const events = longRunEvents(count);
  for (let i = 0; i < events.length; i += 500) {
    if (!(await store.appendEvents(runId, events.slice(i, i + 500)))) {
      throw new Error(`run ${runId} took no events: has it ended?`);
    }
  }
}
