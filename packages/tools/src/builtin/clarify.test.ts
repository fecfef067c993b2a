import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFixture, type Fixture, invoke } from '../testing/fixtures.js';
import { formatClarifyFallback } from './clarify.js';

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
});

afterEach(async () => {
  await fx.cleanup();
});

describe('clarify', () => {
  it("returns the question in the design's 5.3 form for zh", async () => {
    const result = await invoke(fx.tool('clarify', { locale: 'zh' }), {
      question: '用哪个数据库？',
      choices: ['PostgreSQL', 'SQLite'],
    });
    expect(result).toEqual({
      ok: true,
      content: '[clarify] 问题: 用哪个数据库？\n选项: PostgreSQL / SQLite',
    });
  });

  it('returns the English equivalent by default', async () => {
    expect(
      await invoke(fx.tool('clarify'), { question: 'Which database?', choices: ['PostgreSQL', 'SQLite'] }),
    ).toEqual({ ok: true, content: '[clarify] Question: Which database?\nChoices: PostgreSQL / SQLite' });
    expect(await invoke(fx.tool('clarify'), { question: 'Which database?' })).toEqual({
      ok: true,
      content: '[clarify] Question: Which database?',
    });
  });

  it('refuses more than four choices and an empty question', async () => {
    const tool = fx.tool('clarify');
    const five = await invoke(tool, { question: 'Q?', choices: ['a', 'b', 'c', 'd', 'e'] });
    expect(five).toMatchObject({ ok: false, code: 'ERR_TOOL_ARGS_INVALID' });
    expect(five.content).toContain('`choices`');
    expect(await invoke(tool, { question: '' })).toMatchObject({ ok: false, code: 'ERR_TOOL_ARGS_INVALID' });
  });

  it('formats without choices in zh', () => {
    expect(formatClarifyFallback('继续吗？', [], 'zh')).toBe('[clarify] 问题: 继续吗？');
  });
});
