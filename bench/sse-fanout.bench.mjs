// pnpm bench:sse — SSE fan-out: 2,000 concurrent event streams on one API process, events
// appended with RunStore.append, delivery latency from the append call to the client reading
// the frame, and the API's Redis connections, which must not grow with clients (see
// lib/fanout.mjs for the method and the knobs). One JSON line per scenario. Needs `pnpm build`.
import { request } from 'node:http';
import { CLIENTS, measureFanout, startFanout } from './lib/fanout.mjs';

const fanout = await startFanout('sse');

/**
 * One SSE client: counts the frames it reads and records, for each, the time since the
 * append that produced it (the event's text is the append time, on this process's clock).
 */
function connect(runId, latencies) {
  return new Promise((resolve, reject) => {
    const req = request(`${fanout.base}/v1/runs/${runId}/events`, {
      agent: false,
      headers: { ...fanout.auth, accept: 'text/event-stream' },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`stream answered ${res.statusCode}`));
        return;
      }
      let live = () => {};
      const client = {
        received: 0,
        /** Resolves once `run.queued` arrived: the stream has replayed the log and is live. */
        live: new Promise((done) => {
          live = done;
        }),
        close: () => req.destroy(),
      };
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        const now = performance.now();
        buffer += chunk;
        // Frames are read with string searches, not JSON.parse: the client side of the
        // measurement should cost as little as it can on a machine the API shares.
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.includes('\nevent: run.queued\n')) live();
          if (!block.includes('\nevent: message.delta\n')) continue;
          const at = block.indexOf('"text":"');
          client.received++;
          latencies.push(now - Number(block.slice(at + 8, block.indexOf('"', at + 8))));
        }
      });
      resolve(client);
    });
    req.end();
  });
}

async function scenario(name, runs, spread) {
  const runIds = [];
  for (let i = 0; i < runs; i++) {
    const { id } = await fanout.post('/v1/runs', {
      input: 'bench',
      model: { provider: 'replay', script: [{ content: 'ok' }] },
    });
    runIds.push(id);
  }
  await measureFanout(fanout, {
    bench: 'sse-fanout',
    scenario: name,
    runIds,
    spread,
    connect: (index, latencies) => connect(runIds[index], latencies),
    fields: { runs, clients_per_run: CLIENTS / runs },
  });
}

try {
  // Pure fan-out, the worst case: every client follows one run, so each event goes to
  // 2,000 sockets at once. Then 200 runs with 10 clients each, all appending at once, and
  // appending spread over the round as independent runs do.
  await scenario('one-run', 1, false);
  await scenario('200-runs-burst', 200, false);
  await scenario('200-runs-spread', 200, true);
} finally {
  await fanout.stop();
}
