/**
 * Keeps the first and last bytes of an unbounded stream in fixed buffers:
 * memory is `headBytes + tailBytes` whatever goes through, and the text says
 * how much was cut from the middle.
 */
export class OutputCapture {
  readonly #head: Buffer;
  readonly #tail: Buffer;
  #headLength = 0;
  /** Next write position in the tail ring. */
  #tailPosition = 0;
  #tailLength = 0;
  #total = 0;

  /** @param capBytes bytes kept in all: half from the start, half from the end */
  constructor(capBytes: number) {
    const headBytes = Math.ceil(capBytes / 2);
    this.#head = Buffer.alloc(headBytes);
    this.#tail = Buffer.alloc(capBytes - headBytes);
  }

  /** Bytes seen so far. */
  get totalBytes(): number {
    return this.#total;
  }

  /** Bytes seen but not kept. */
  get omittedBytes(): number {
    return this.#total - this.#headLength - this.#tailLength;
  }

  /** Adds a chunk; copies what is kept, retains no reference to `chunk`. */
  push(chunk: Uint8Array): void {
    this.#total += chunk.length;
    let rest = chunk;
    if (this.#headLength < this.#head.length) {
      const n = Math.min(rest.length, this.#head.length - this.#headLength);
      this.#head.set(rest.subarray(0, n), this.#headLength);
      this.#headLength += n;
      rest = rest.subarray(n);
    }
    const size = this.#tail.length;
    if (rest.length === 0 || size === 0) return;
    if (rest.length >= size) rest = rest.subarray(rest.length - size);
    const first = Math.min(rest.length, size - this.#tailPosition);
    this.#tail.set(rest.subarray(0, first), this.#tailPosition);
    this.#tail.set(rest.subarray(first), 0);
    this.#tailPosition = (this.#tailPosition + rest.length) % size;
    this.#tailLength = Math.min(size, this.#tailLength + rest.length);
  }

  /** The tail in stream order. */
  #tailBytes(): Buffer {
    if (this.#tailLength < this.#tail.length) return this.#tail.subarray(0, this.#tailLength);
    return Buffer.concat([
      this.#tail.subarray(this.#tailPosition),
      this.#tail.subarray(0, this.#tailPosition),
    ]);
  }

  /**
   * The kept text, decoded as UTF-8. When bytes were cut, a line in the middle
   * says how many, and the cut edges are moved to character boundaries.
   */
  text(): string {
    const head = this.#head.subarray(0, this.#headLength);
    const tail = this.#tailBytes();
    const omitted = this.omittedBytes;
    if (omitted === 0) return Buffer.concat([head, tail]).toString('utf8');
    return (
      `${head.subarray(0, completeUtf8Length(head)).toString('utf8')}` +
      `\n[... ${omitted} bytes omitted of ${this.#total}; the first ${head.length} and the last ${tail.length} are shown ...]\n` +
      `${tail.subarray(utf8Start(tail)).toString('utf8')}`
    );
  }
}

/** Length of `bytes` without a trailing incomplete UTF-8 sequence. */
function completeUtf8Length(bytes: Uint8Array): number {
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back] as number;
    if ((byte & 0xc0) === 0x80) continue;
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? bytes.length - back : bytes.length;
  }
  return bytes.length;
}

/** Index of the first byte of `bytes` that starts a UTF-8 character. */
function utf8Start(bytes: Uint8Array): number {
  let i = 0;
  while (i < Math.min(3, bytes.length) && ((bytes[i] as number) & 0xc0) === 0x80) i++;
  return i;
}
