import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { SseResponse, type StreamEnd } from './sse-response.js';

/** A response that records what is done to it; `writableLength` is what the client has not taken. */
class FakeResponse extends EventEmitter {
  writableLength = 0;
  readonly written: string[] = [];
  readonly calls: string[] = [];
  write(chunk: Buffer | string): boolean {
    this.written.push(String(chunk));
    return true;
  }
  end(): void {
    this.calls.push('end');
  }
  destroy(): void {
    this.calls.push('destroy');
  }
}

function setUp(maxBufferBytes = 100) {
  const res = new FakeResponse();
  const info = vi.fn();
  const ends: StreamEnd[] = [];
  const sse = new SseResponse({
    res: res as unknown as ServerResponse,
    maxBufferBytes,
    log: { info } as unknown as FastifyBaseLogger,
    slow: { message: 'dropping a slow client', fields: { runId: 'run_1' } },
    onFinish: (why) => ends.push(why),
  });
  return { res, info, ends, sse };
}

describe('SseResponse', () => {
  it('ends cleanly once, for the first reason given', () => {
    const { res, ends, sse } = setUp();
    sse.end('terminal');
    sse.end('shutdown');
    sse.drop('error');
    expect(sse.over).toBe(true);
    expect(res.calls).toEqual(['end']);
    expect(ends).toEqual(['terminal']);
  });

  it('drops the connection without ending the response', () => {
    const { res, ends, sse } = setUp();
    sse.drop('error');
    sse.end('terminal');
    expect(res.calls).toEqual(['destroy']);
    expect(ends).toEqual(['error']);
  });

  it('is over when the client closes, once watched', () => {
    const { res, ends, sse } = setUp();
    res.emit('close');
    expect(sse.over).toBe(false);
    sse.watchClose();
    res.emit('close');
    res.emit('close');
    expect(res.calls).toEqual([]);
    expect(ends).toEqual(['client']);
  });

  it('pings a client within the bound; drops one beyond it, saying which', () => {
    const { res, info, ends, sse } = setUp(100);
    res.writableLength = 100;
    expect(sse.withinBound()).toBe(true);
    sse.ping();
    expect(res.written).toEqual([': ping\n\n']);
    res.writableLength = 101;
    expect(sse.withinBound()).toBe(false);
    sse.ping();
    expect(res.written).toHaveLength(1);
    expect(res.calls).toEqual(['destroy']);
    expect(ends).toEqual(['slow']);
    expect(info).toHaveBeenCalledWith({ runId: 'run_1', unsent: 101 }, 'dropping a slow client');
    expect(sse.hasRoom()).toBe(false);
    expect(ends).toEqual(['slow']);
  });

  it('pings nothing once over', () => {
    const { res, sse } = setUp();
    sse.end('terminal');
    sse.ping();
    expect(res.written).toEqual([]);
  });
});
