import { describe, expect, it } from 'vitest';
import { relativeInside } from './confine-path.js';

describe('relativeInside', () => {
  it.each([
    ['/a/ws', '/a/ws', ''],
    ['/a/ws', '/a/ws/x/y', 'x/y'],
    ['/a/ws', '/a/ws-sibling/x', undefined],
    ['/a/ws', '/a', undefined],
    ['/a/ws', '/a/ws/..foo', '..foo'],
  ])('%s contains %s -> %s', (parent, child, expected) => {
    expect(relativeInside(parent, child)).toBe(expected);
  });
});
