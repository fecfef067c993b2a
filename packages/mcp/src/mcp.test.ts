import { describe, expect, it } from 'vitest';
import { ListingCache } from './listing-cache.js';
import { formatCallResult } from './result.js';
import { MODEL_TOOL_NAME_MAX, modelToolName } from './tool-names.js';

describe('modelToolName', () => {
  it('is <server>__<tool> when a model API takes it', () => {
    expect(modelToolName('docs', 'search-pages', new Set())).toEqual({
      name: 'docs__search-pages',
      renamed: false,
    });
  });

  it('cleans what a model API refuses, and cuts a long name with a hash of the full one, stably', () => {
    expect(modelToolName('fs', 'files.read/all', new Set())).toEqual({
      name: 'fs__files_read_all',
      renamed: true,
    });
    const long = modelToolName(
      'server-with-a-long-name',
      'a_tool_whose_name_is_much_too_long_for_openai',
      new Set(),
    );
    expect(long.name).toHaveLength(MODEL_TOOL_NAME_MAX);
    expect(long.name).toMatch(/^server-with-a-long-name__a_tool_whose_name_is_much_too__[0-9a-f]{8}$/);
    expect(
      modelToolName('server-with-a-long-name', 'a_tool_whose_name_is_much_too_long_for_openai', new Set()),
    ).toEqual(long);
  });

  it('gives a taken name a hash too, so two tools never share one', () => {
    const taken = new Set(['fs__read_file']);
    const other = modelToolName('fs', 'read.file', taken);
    expect(other.name).toMatch(/^fs__read_file_[0-9a-f]{8}$/);
    expect(other.renamed).toBe(true);
  });
});

describe('ListingCache', () => {
  it('keeps a listing for its TTL, and the newest entries past its size', () => {
    let now = 0;
    const cache = new ListingCache({ ttlMs: 1_000, maxEntries: 2, now: () => now });
    const tools = [{ name: 't', inputSchema: { type: 'object' } }];
    cache.set('a', tools);
    expect(cache.get('a')).toBe(tools);
    now = 1_000;
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', tools);
    cache.set('b', tools);
    cache.set('c', tools);
    expect([cache.get('a'), cache.get('b'), cache.get('c')].map(Boolean)).toEqual([false, true, true]);
    expect(new ListingCache({ ttlMs: 0 }).get('x')).toBeUndefined();
  });
});

describe('formatCallResult', () => {
  it('joins text, describes what it cannot show, and marks an error', () => {
    const result = formatCallResult(
      {
        content: [
          { type: 'text', text: 'first' },
          { type: 'image', mimeType: 'image/png', data: 'AAAA' },
          { type: 'resource_link', name: 'readme', uri: 'file:///README.md' },
          { type: 'resource', resource: { uri: 'mem://a', text: 'inline' } },
        ],
      },
      's',
      't',
    );
    expect(result).toEqual({
      ok: true,
      content:
        'first\n[image image/png, 3 bytes, not shown]\n[resource link readme: file:///README.md]\n[resource mem://a]\ninline',
    });
    expect(formatCallResult({ content: [], structuredContent: { sum: 5 } }, 's', 't')).toEqual({
      ok: true,
      content: '{"sum":5}',
    });
    expect(
      formatCallResult({ content: [{ type: 'text', text: 'no such city' }], isError: true }, 'w', 'weather'),
    ).toEqual({
      ok: false,
      code: 'ERR_TOOL_MCP_FAILED',
      content: 'The MCP server w reported an error from weather: no such city',
    });
    expect(formatCallResult({}, 's', 't')).toEqual({ ok: true, content: '(no output)' });
  });
});
