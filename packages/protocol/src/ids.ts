import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * A time-sortable id: `prefix_` then 26 lowercase Crockford base-32
 * characters, 10 of time (ms) and 16 random (80 bits), like a ULID. Ids made
 * later sort after earlier ones (to the millisecond).
 */
export function newId(prefix: 'run' | 'clr'): string {
  let time = Date.now();
  let head = '';
  for (let i = 0; i < 10; i++) {
    head = ALPHABET[time % 32] + head;
    time = Math.floor(time / 32);
  }
  let tail = '';
  for (let i = 0; i < 16; i++) tail += ALPHABET[randomByte() & 31];
  return `${prefix}_${head}${tail}`;
}

// Random bytes are drawn from the kernel 4 KB at a time rather than 16 per id.
const pool = new Uint8Array(4096);
let next = pool.length;
function randomByte(): number {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  return pool[next++] as number;
}
