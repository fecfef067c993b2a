// A browser's WebSocket for the gateway's tests: Node's WHATWG WebSocket (undici; run with
// `node --experimental-websocket` on Node 20), which checks frames as browsers do. Connects to
// argv[2], prints one JSON line per message (its length and SHA-256, in ASCII) and one for the
// close, then exits.
import { createHash } from 'node:crypto';

const digest = (text) => `${text.length}:${createHash('sha256').update(text).digest('hex')}`;
const socket = new WebSocket(process.argv[2]);
socket.binaryType = 'arraybuffer';
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
socket.onopen = () => print({ open: true });
socket.onmessage = (message) =>
  print(
    typeof message.data === 'string' ? { text: digest(message.data) } : { binary: message.data.byteLength },
  );
socket.onerror = (error) => print({ error: String(error.message ?? error.type) });
socket.onclose = (close) => {
  print({ close: close.code, reason: close.reason, clean: close.wasClean });
  process.exit(0);
};
