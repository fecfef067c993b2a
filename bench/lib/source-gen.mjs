// Deterministic generator of source-like text for the fuzzy-match benchmarks.

/** A small seeded PRNG (mulberry32), so every run sees the same inputs. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  'user',
  'account',
  'request',
  'response',
  'value',
  'result',
  'buffer',
  'index',
  'count',
  'total',
  'config',
  'options',
  'handler',
  'session',
  'token',
  'record',
  'entry',
  'queue',
  'item',
  'payload',
  'status',
  'error',
  'message',
  'stream',
  'cursor',
  'limit',
  'offset',
  'retry',
  'timeout',
  'cache',
];
const CALLS = [
  'compute',
  'validate',
  'fetchRecord',
  'parseInput',
  'render',
  'serialize',
  'merge',
  'apply',
  'notify',
];

export function makeLine(next, n) {
  const pick = (list) => list[Math.floor(next() * list.length)];
  const id = () => `${pick(WORDS)}${Math.floor(next() * 1000)}`;
  const indent = '  '.repeat(1 + Math.floor(next() * 3));
  switch (Math.floor(next() * 8)) {
    case 0:
      return `${indent}const ${id()} = ${pick(CALLS)}(${id()}, ${Math.floor(next() * 100)});`;
    case 1:
      return `${indent}if (${id()} > ${Math.floor(next() * 500)}) {`;
    case 2:
      return `${indent}}`;
    case 3:
      return `${indent}return ${pick(CALLS)}(${id()}.${pick(WORDS)});`;
    case 4:
      return `${indent}// ${pick(WORDS)} ${pick(WORDS)} ${pick(WORDS)} for line ${n}`;
    case 5:
      return `${indent}${id()}.${pick(WORDS)} = await ${pick(CALLS)}(${id()});`;
    case 6:
      return '';
    default:
      return `${indent}logger.info({ ${pick(WORDS)}: ${id()} }, '${pick(WORDS)} ${pick(WORDS)}');`;
  }
}

/** `count` source-like lines from `seed`, each distinct in its numbers. */
export function makeLines(count, seed) {
  const next = rng(seed);
  const lines = [];
  for (let n = 0; n < count; n++) lines.push(makeLine(next, n));
  return lines;
}

/** Changes roughly `share` of the non-space characters of `line`, deterministically. */
export function mutate(line, share, next) {
  let out = '';
  for (const ch of line) {
    if (ch !== ' ' && next() < share) out += String.fromCharCode(97 + Math.floor(next() * 26));
    else out += ch;
  }
  return out;
}
