import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { spawnNode } from './processes.js';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join('/tmp', 'tether-processes-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('keeps a character whose bytes arrive in two chunks whole, in the output and in lines', async () => {
  const script = path.join(dir, 'split.mjs');
  // "é" is 0xc3 0xa9: its first byte goes out alone, its second 50 ms later.
  await writeFile(
    script,
    [
      'process.stdout.write(Buffer.from([0x61, 0xc3]));',
      'setTimeout(() => process.stdout.write(Buffer.from([0xa9, 0x0a])), 50);',
    ].join('\n'),
  );
  const lines: string[] = [];
  const child = spawnNode(script, {}, [], { onLine: (line) => lines.push(line) });
  await child.waitFor(/aé\n/);
  expect(child.output()).toBe('aé\n');
  expect(lines).toEqual(['aé']);
  await child.stop();
});
