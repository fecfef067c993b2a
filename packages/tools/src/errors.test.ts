import { readFile } from 'node:fs/promises';
import { TetherError } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { TOOL_ERROR_CODES, ToolError } from './errors.js';

describe('error catalog', () => {
  it('lists in docs/tools.md exactly the codes of the catalog', async () => {
    const docs = await readFile(new URL('../../../docs/tools.md', import.meta.url), 'utf8');
    const documented = new Set(docs.match(/ERR_TOOL_[A-Z_]+/g));
    expect([...documented].sort()).toEqual(Object.keys(TOOL_ERROR_CODES).sort());
  });

  it('uses ERR_TOOL_ codes on a TetherError', () => {
    const error = new ToolError('ERR_TOOL_NOT_FOUND', 'x');
    expect(error).toBeInstanceOf(TetherError);
    expect(error.toJSON()).toEqual({ code: 'ERR_TOOL_NOT_FOUND', message: 'x' });
    for (const code of Object.keys(TOOL_ERROR_CODES)) expect(code).toMatch(/^ERR_TOOL_[A-Z_]+$/);
  });
});
