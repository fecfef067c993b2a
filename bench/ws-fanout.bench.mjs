// pnpm bench:ws-fanout — the WebSocket variant of bench:sse: 2,000 gateway sockets
// (`GET /v1/ws`) over 200 sessions, each socket subscribed to one session whose run's events
// are appended with RunStore.append; delivery latency from the append call to the client
// reading the `event` frame, and the API's Redis connections, which must not grow with
// sockets (see lib/fanout.mjs for the method and the knobs). Goal: p99 <= 50 ms.
// One JSON line per scenario. Needs `pnpm build`.
import WebSocket from '../apps/api/node_modules/ws/wrapper.mjs';
import { CLIENTS, measureFanout, startFanout } from './lib/fanout.mjs';

const fanout = await startFanout('ws', { TETHER_WS_MAX_PER_TENANT: String(CLIENTS * 2) });
const url = `${fanout.base.replace(/^http/, 'ws')}/v1/ws`;

/**
 * One socket subscribed to `sessionId`: counts the `message.delta` events it reads and
 * records, for each, the time since the append that produced it.
 */
function connect(sessionId, latencies) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers: fanout.auth, perMessageDeflate: false });
    let live = () => {};
    const client = {
      received: 0,
      /** Resolves once `run.queued` arrived: the backlog is read and the socket follows live. */
      live: new Promise((done) => {
        live = done;
      }),
      close: () => socket.terminate(),
    };
    socket.on('error', reject);
    socket.on('open', () => {
      socket.send(JSON.stringify({ type: 'subscribe', sessionId, after: null }));
      resolve(client);
    });
    socket.on('message', (data) => {
      const now = performance.now();
      // String searches, not JSON.parse: the client side should cost as little as it can.
      const text = data.toString();
      if (text.includes('"type":"run.queued"')) live();
      if (!text.includes('"type":"message.delta"')) return;
      const at = text.indexOf('"text":"');
      client.received++;
      latencies.push(now - Number(text.slice(at + 8, text.indexOf('"', at + 8))));
    });
  });
}

async function scenario(name, sessions, spread) {
  const sessionIds = [];
  const runIds = [];
  for (let i = 0; i < sessions; i++) {
    const { id } = await fanout.post('/v1/sessions', {}, 201);
    // No worker: the run stays queued, and its log is what the benchmark appends to.
    const run = await fanout.post(`/v1/sessions/${id}/runs`, {
      input: 'bench',
      model: { provider: 'replay', script: [{ content: 'ok' }] },
    });
    sessionIds.push(id);
    runIds.push(run.id);
  }
  await measureFanout(fanout, {
    bench: 'ws-fanout',
    scenario: name,
    runIds,
    spread,
    connect: (index, latencies) => connect(sessionIds[index], latencies),
    fields: { sessions, sockets_per_session: CLIENTS / sessions },
  });
}

try {
  // 200 sessions with 10 sockets each: every session's run appending at once, then spread over
  // the round as independent runs do; and the worst case, every socket on one session.
  await scenario('200-sessions-burst', 200, false);
  await scenario('200-sessions-spread', 200, true);
  await scenario('one-session', 1, false);
} finally {
  await fanout.stop();
}
