import { randomBytes } from 'node:crypto';

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
  const bytes = randomBytes(16);
  let tail = '';
  for (let i = 0; i < 16; i++) tail += ALPHABET[(bytes[i] as number) & 31];
  return `${prefix}_${head}${tail}`;
}
