import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { callContext, createFixture, type Fixture, invoke } from '../testing/fixtures.js';

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
});

afterEach(async () => {
  await fx.cleanup();
});

function put(name: string, content: string | Buffer): Promise<void> {
  return writeFile(path.join(fx.workspace, name), content);
}

function lines(from: number, to: number): string {
  const out: string[] = [];
  for (let n = from; n <= to; n++) out.push(`line ${n}`);
  return out.join('\n');
}

function numbered(from: number, to: number): string {
  const out: string[] = [];
  for (let n = from; n <= to; n++) out.push(`${String(n).padStart(6, ' ')}\tline ${n}`);
  return out.join('\n');
}

describe('read_file', () => {
  it('shows the whole file with line numbers and no note', async () => {
    await put('a.txt', `${lines(1, 3)}\n`);
    expect(await invoke(fx.tool('read_file'), { path: 'a.txt' })).toEqual({
      ok: true,
      content: numbered(1, 3),
    });
  });

  it('counts a last line without a final newline', async () => {
    await put('a.txt', lines(1, 2));
    expect((await invoke(fx.tool('read_file'), { path: 'a.txt' })).content).toBe(numbered(1, 2));
  });

  it('pages with offset and limit, and says where to continue', async () => {
    await put('a.txt', `${lines(1, 10)}\n`);
    const page = await invoke(fx.tool('read_file'), { path: 'a.txt', offset: 3, limit: 4 });
    expect(page.content).toBe(
      `${numbered(3, 6)}\n[Showed lines 3-6; the file continues. Call read_file with offset=7 to read more.]`,
    );
    const last = await invoke(fx.tool('read_file'), { path: 'a.txt', offset: 7, limit: 4 });
    expect(last.content).toBe(`${numbered(7, 10)}\n[Showed lines 7-10 of 10.]`);
  });

  it('uses the default line limit from the limits', async () => {
    await put('a.txt', `${lines(1, 10)}\n`);
    const result = await invoke(fx.tool('read_file', { limits: { readFileDefaultLines: 2 } }), {
      path: 'a.txt',
    });
    expect(result.content).toBe(
      `${numbered(1, 2)}\n[Showed lines 1-2; the file continues. Call read_file with offset=3 to read more.]`,
    );
  });

  it('caps the output in bytes and says how to read on', async () => {
    await put('big.txt', `${lines(1, 5000)}\n`);
    const result = await invoke(fx.tool('read_file', { limits: { readFileMaxBytes: 1024 } }), {
      path: 'big.txt',
    });
    const match =
      /\[Output capped at 1024 bytes: showed lines 1-(\d+)\. Call read_file with offset=(\d+) to continue\.\]$/.exec(
        result.content,
      );
    expect(match).not.toBeNull();
    const lastShown = Number(match?.[1]);
    expect(Number(match?.[2])).toBe(lastShown + 1);
    expect(Buffer.byteLength(result.content)).toBeLessThan(1024 + 200);
    expect(result.content.startsWith(numbered(1, lastShown))).toBe(true);
  });

  it('cuts very long lines and says so', async () => {
    await put('long.txt', `${'x'.repeat(500)}\nshort\n`);
    const result = await invoke(fx.tool('read_file', { limits: { readFileMaxLineChars: 100 } }), {
      path: 'long.txt',
    });
    expect(result.content).toBe(
      `     1\t${'x'.repeat(100)} [... 400 more characters]\n     2\tshort\n[1 line(s) longer than 100 characters were cut.]`,
    );
  });

  it('reads a large file in bounded time and memory, stopping at the page', async () => {
    await put('huge.txt', `${'y'.repeat(99)}\n`.repeat(200_000));
    const result = await invoke(fx.tool('read_file'), { path: 'huge.txt', offset: 100_000, limit: 2 });
    expect(result.content).toContain('100000\t');
    expect(result.content).toContain('offset=100002');
  });

  it('hides CRLF and a BOM, noting CRLF', async () => {
    await put('crlf.txt', '\uFEFFone\r\ntwo\r\n');
    expect((await invoke(fx.tool('read_file'), { path: 'crlf.txt' })).content).toBe(
      '     1\tone\n     2\ttwo\n[The file uses CRLF line endings; the \\r characters are not shown.]',
    );
  });

  it('reports an empty file', async () => {
    await put('empty.txt', '');
    expect(await invoke(fx.tool('read_file'), { path: 'empty.txt' })).toEqual({
      ok: true,
      content: '"empty.txt" is empty (0 lines).',
    });
  });

  it('refuses an offset past the end', async () => {
    await put('a.txt', `${lines(1, 3)}\n`);
    expect(await invoke(fx.tool('read_file'), { path: 'a.txt', offset: 4 })).toEqual({
      ok: false,
      code: 'ERR_TOOL_OFFSET_OUT_OF_RANGE',
      content: 'offset 4 is past the end of "a.txt", which has 3 line(s). Use an offset between 1 and 3.',
    });
  });

  it('refuses binary files', async () => {
    await put('bin.dat', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02]));
    const result = await invoke(fx.tool('read_file'), { path: 'bin.dat' });
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_FILE_BINARY' });
    expect(result.content).toContain('binary');
  });

  it('refuses a missing file, a directory and a FIFO (without blocking on it)', async () => {
    await mkdir(path.join(fx.workspace, 'dir'));
    execFileSync('mkfifo', [path.join(fx.workspace, 'pipe')]);
    const tool = fx.tool('read_file');
    expect(await invoke(tool, { path: 'missing.txt' })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_NOT_FOUND',
    });
    expect(await invoke(tool, { path: 'dir' })).toMatchObject({ ok: false, code: 'ERR_TOOL_NOT_A_FILE' });
    expect(await invoke(tool, { path: 'pipe' })).toMatchObject({ ok: false, code: 'ERR_TOOL_NOT_A_FILE' });
    expect(await invoke(tool, { path: 'missing/deeper.txt' })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_NOT_FOUND',
    });
  });

  it('refuses invalid offsets and limits before reading', async () => {
    const tool = fx.tool('read_file');
    for (const args of [
      { path: 'a', offset: 0 },
      { path: 'a', limit: 0 },
      { path: 'a', offset: 1.5 },
    ]) {
      expect(await invoke(tool, args)).toMatchObject({ ok: false, code: 'ERR_TOOL_ARGS_INVALID' });
    }
  });

  it('does nothing once cancelled', async () => {
    await put('a.txt', 'a\n');
    const controller = new AbortController();
    controller.abort();
    const result = await invoke(fx.tool('read_file'), { path: 'a.txt' }, callContext(controller.signal));
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_CANCELLED' });
  });
});
