// pnpm bench:ws-fanout — the WebSocket variant of bench:sse: 2,000 gateway sockets
// (`GET /v1/ws`) over 200 sessions, each socket subscribed to one session whose run's events
// are appended with RunStore.append; delivery latency from the append call to the client
// reading the `event` frame, and the API's Redis connections, which must not grow with
// sockets (see lib/fanout.mjs for the method and the knobs). Goal: p99 <= 50 ms.
// One JSON line per scenario. Needs `pnpm build`.
// BENCH_WS_CLIENT: `raw` (the default) reads the frames off the socket itself, as the SSE
// client reads its stream; `ws` reads them through the ws library's per-message events.
import { createHash, randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import WebSocket from '../apps/api/node_modules/ws/wrapper.mjs';
import { CLIENTS, measureFanout, startFanout } from './lib/fanout.mjs';

const CLIENT = process.env.BENCH_WS_CLIENT ?? 'raw';
if (CLIENT !== 'raw' && CLIENT !== 'ws') throw new Error('BENCH_WS_CLIENT is raw or ws');

const fanout = await startFanout('ws', { TETHER_WS_MAX_PER_TENANT: String(CLIENTS * 2) });
const url = `${fanout.base.replace(/^http/, 'ws')}/v1/ws`;

/** A client's state: the deliveries it counted, and when it follows live (`run.queued` read). */
function clientState(close) {
  let live = () => {};
  const client = {
    received: 0,
    /** Resolves once `run.queued` arrived: the backlog is read and the socket follows live. */
    live: new Promise((done) => {
      live = done;
    }),
    close,
    /** Reads one `event` frame's JSON (a Buffer or a string, searched the same way). */
    read(text, now, latencies) {
      if (text.indexOf('"type":"run.queued"') >= 0) live();
      if (text.indexOf('"type":"message.delta"') < 0) return;
      const at = text.indexOf('"text":"') + 8;
      client.received++;
      const sent =
        typeof text === 'string'
          ? text.slice(at, text.indexOf('"', at))
          : text.toString('latin1', at, text.indexOf(34, at));
      latencies.push(now - Number(sent));
    },
  };
  return client;
}

/**
 * One socket subscribed to `sessionId` through the ws library: counts the `message.delta`
 * events it reads and records, for each, the time since the append that produced it.
 */
function connectWs(sessionId, latencies) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers: fanout.auth, perMessageDeflate: false });
    const client = clientState(() => socket.terminate());
    socket.on('error', reject);
    socket.on('open', () => {
      socket.send(JSON.stringify({ type: 'subscribe', sessionId, after: null }));
      resolve(client);
    });
    // String searches, not JSON.parse: the client side should cost as little as it can.
    socket.on('message', (data) => client.read(data.toString(), performance.now(), latencies));
  });
}

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** A client's frame (RFC 6455: masked), FIN set. */
function clientFrame(opcode, payload) {
  const header = payload.length < 126 ? 2 : 4;
  const frame = Buffer.allocUnsafe(header + 4 + payload.length);
  frame[0] = 0x80 | opcode;
  if (header === 2) frame[1] = 0x80 | payload.length;
  else {
    frame[1] = 0x80 | 126;
    frame.writeUInt16BE(payload.length, 2);
  }
  const mask = randomBytes(4);
  mask.copy(frame, header);
  for (let i = 0; i < payload.length; i++) frame[header + 4 + i] = payload[i] ^ mask[i & 3];
  return frame;
}

/** One buffer all raw clients read into (`onread`): each read is handled before the next. */
const READ_BUFFER = Buffer.allocUnsafe(256 * 1024);

/**
 * The same socket with the upgrade written and the frames read off the connection by the
 * benchmark itself, as the SSE client reads its stream: each frame's header and length, then
 * its JSON searched as bytes (no UTF-8 decoding, no stream events: `net`'s `onread`). Pings
 * are answered; a close, a masked or fragmented frame ends the socket, as they are not what the
 * gateway sends.
 */
function connectRaw(sessionId, latencies) {
  return new Promise((resolve, reject) => {
    const key = randomBytes(16).toString('base64');
    const accept = createHash('sha1')
      .update(key + WS_GUID)
      .digest('base64');
    const { hostname, port } = new URL(fanout.base);
    let upgraded = false;
    let rest;
    const client = clientState(() => socket.destroy());
    const fail = (why) => {
      if (!upgraded) reject(new Error(why));
      else console.error(`ws-fanout: ${why}`);
      socket.destroy();
    };
    /** Reads the frames in `data`; returns where the unread part (an incomplete frame) starts. */
    const frames = (data, now) => {
      let at = 0;
      while (data.length - at >= 2) {
        const first = data[at];
        let length = data[at + 1];
        let start = at + 2;
        if (length & 0x80) return fail('a masked frame from the server');
        if (length === 126) {
          if (data.length - at < 4) break;
          length = data.readUInt16BE(at + 2);
          start = at + 4;
        } else if (length === 127) {
          if (data.length - at < 10) break;
          length = Number(data.readBigUInt64BE(at + 2));
          start = at + 10;
        }
        const end = start + length;
        if (end > data.length) break;
        const opcode = first & 0x0f;
        if ((first & 0x80) === 0 || opcode === 0) return fail('a fragmented frame');
        if (opcode === 1) client.read(data.subarray(start, end), now, latencies);
        else if (opcode === 9) socket.write(clientFrame(10, data.subarray(start, end)));
        else if (opcode === 8) return socket.destroy();
        at = end;
      }
      return at;
    };
    const socket = connect({
      host: hostname,
      port: Number(port),
      noDelay: true,
      onread: {
        buffer: READ_BUFFER,
        callback: (read, buffer) => {
          const now = performance.now();
          const chunk = buffer.subarray(0, read);
          let data = rest === undefined ? chunk : Buffer.concat([rest, chunk]);
          rest = undefined;
          if (!upgraded) {
            const headEnd = data.indexOf('\r\n\r\n');
            if (headEnd < 0) {
              rest = Buffer.from(data);
              return;
            }
            const head = data.toString('latin1', 0, headEnd);
            if (!head.startsWith('HTTP/1.1 101 '))
              return fail(`the upgrade was answered ${head.split('\r\n')[0]}`);
            if (!head.toLowerCase().includes(`\r\nsec-websocket-accept: ${accept.toLowerCase()}`)) {
              return fail('the upgrade answered a wrong Sec-WebSocket-Accept');
            }
            upgraded = true;
            socket.write(
              clientFrame(1, Buffer.from(JSON.stringify({ type: 'subscribe', sessionId, after: null }))),
            );
            resolve(client);
            data = data.subarray(headEnd + 4);
          }
          const at = frames(data, now);
          // The read buffer is used again by the next read: keep a copy of an incomplete frame.
          if (at !== undefined && at < data.length) rest = Buffer.from(data.subarray(at));
        },
      },
    });
    socket.on('error', (error) => fail(error.message));
    socket.write(
      `GET /v1/ws HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: ${fanout.auth.authorization}\r\n` +
        `Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
  });
}

const connectSocket = CLIENT === 'raw' ? connectRaw : connectWs;

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
    connect: (index, latencies) => connectSocket(sessionIds[index], latencies),
    fields: { sessions, sockets_per_session: CLIENTS / sessions, client: CLIENT },
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
