import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { OutputCapture } from './output-capture.js';

/** What the capture must keep: the first ceil(cap/2) and last floor(cap/2) bytes. */
function expected(all: Buffer, cap: number): { head: Buffer; tail: Buffer; omitted: number } {
  const headBytes = Math.ceil(cap / 2);
  const tailBytes = cap - headBytes;
  if (all.length <= cap) return { head: all, tail: Buffer.alloc(0), omitted: 0 };
  return {
    head: all.subarray(0, headBytes),
    tail: all.subarray(all.length - tailBytes),
    omitted: all.length - cap,
  };
}

describe('OutputCapture', () => {
  it('keeps everything that fits, verbatim', () => {
    const capture = new OutputCapture(100);
    capture.push(Buffer.from('hello '));
    capture.push(Buffer.from('world'));
    expect(capture.text()).toBe('hello world');
    expect(capture.omittedBytes).toBe(0);
  });

  it('keeps exactly the head and the tail for any chunking', () => {
    for (let round = 0; round < 200; round++) {
      const cap = 1 + Math.floor(Math.random() * 64);
      const all = Buffer.from(
        randomBytes(Math.floor(Math.random() * 400))
          .toString('hex')
          .slice(0, 300),
      );
      const capture = new OutputCapture(cap);
      for (let at = 0; at < all.length; ) {
        const size = 1 + Math.floor(Math.random() * 40);
        capture.push(all.subarray(at, at + size));
        at += size;
      }
      const want = expected(all, cap);
      expect(capture.totalBytes).toBe(all.length);
      expect(capture.omittedBytes).toBe(want.omitted);
      const text = capture.text();
      if (want.omitted === 0) {
        expect(text).toBe(all.toString());
      } else {
        expect(text).toBe(
          `${want.head}\n[... ${want.omitted} bytes omitted of ${all.length}; the first ${want.head.length} and the last ${want.tail.length} are shown ...]\n${want.tail}`,
        );
      }
    }
  });

  it('does not split a UTF-8 character at the cut edges', () => {
    const capture = new OutputCapture(8);
    capture.push(Buffer.from('ééééé|ééééé'));
    const text = capture.text();
    expect(text).not.toContain('\uFFFD');
    expect(text.startsWith('éé\n')).toBe(true);
    expect(text.endsWith('\néé')).toBe(true);
  });
});
