import { describe, expect, it } from 'vitest';
import { type SseMessage, SseParser } from './sse-parser.js';

/** Feeds `text` split at every position in `cuts` and collects the messages. */
function parse(text: string, cuts: number[] = [], options: ConstructorParameters<typeof SseParser>[0] = {}) {
  const parser = new SseParser(options);
  const messages: SseMessage[] = [];
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    messages.push(...parser.feed(text.slice(from, cut)));
    from = cut;
  }
  return messages;
}

describe('SseParser', () => {
  const stream =
    'id: 1-1\nevent: run.queued\ndata: {"a":1}\n\n: heartbeat\n\nid: 1-2\nevent: message\ndata: x\n\n';

  it('parses id, event and data, and skips comments', () => {
    const comments: string[] = [];
    expect(parse(stream, [], { onComment: (c) => comments.push(c) })).toEqual([
      { id: '1-1', event: 'run.queued', data: '{"a":1}' },
      { id: '1-2', event: 'message', data: 'x' },
    ]);
    expect(comments).toEqual(['heartbeat']);
  });

  it('gives the same messages however the text is split', () => {
    const whole = parse(stream);
    for (let cut = 1; cut < stream.length; cut++) expect(parse(stream, [cut])).toEqual(whole);
  });

  it('accepts CRLF and lone CR line ends, a CR and LF split across chunks, and a leading BOM', () => {
    const crlf = '\uFEFFid: 7\r\ndata: a\r\n\r\ndata: b\r\rdata: c\n\n';
    const expected = [
      { id: '7', event: 'message', data: 'a' },
      { id: '7', event: 'message', data: 'b' },
      { id: '7', event: 'message', data: 'c' },
    ];
    expect(parse(crlf)).toEqual(expected);
    const splitAtCr = crlf.indexOf('\r\n') + 1;
    expect(parse(crlf, [splitAtCr])).toEqual(expected);
  });

  it('joins data lines with newlines, strips one leading space, and keeps a value without space', () => {
    expect(parse('data:  two spaces\ndata:none\n\n')).toEqual([
      { id: undefined, event: 'message', data: ' two spaces\nnone' },
    ]);
  });

  it('does not dispatch a message without data, and reports retry', () => {
    const retries: number[] = [];
    expect(
      parse('event: x\n\nretry: 1500\nretry: soon\n\n', [], { onRetry: (ms) => retries.push(ms) }),
    ).toEqual([]);
    expect(retries).toEqual([1500]);
  });

  it('keeps an incomplete message until its blank line arrives', () => {
    const parser = new SseParser();
    expect(parser.feed('data: {"partial":')).toEqual([]);
    expect(parser.feed('true}\n')).toEqual([]);
    expect(parser.feed('\n')).toEqual([{ id: undefined, event: 'message', data: '{"partial":true}' }]);
  });
});
