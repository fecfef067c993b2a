import { describe, expect, it } from 'vitest';
import { idTime, newChildRunId, newId, newSessionRunId } from './ids.js';

describe('idTime', () => {
  it('reads the time an id was made from the id, for every kind of run id', () => {
    const before = Date.now();
    const ids = [newId('run'), newId('clr'), newSessionRunId(newId('ses')), newChildRunId(newId('run'))];
    const after = Date.now();
    for (const id of ids) {
      const time = idTime(id) as number;
      expect(time).toBeGreaterThanOrEqual(before);
      expect(time).toBeLessThanOrEqual(after);
    }
  });

  it('is undefined for what no id looks like', () => {
    for (const text of [
      '',
      'run',
      'run_',
      'run_0123',
      'run_ILOU012345abcdefghjk',
      'nounderscore0123456789',
    ]) {
      expect(idTime(text)).toBeUndefined();
    }
  });
});
