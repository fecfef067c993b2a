import { describe, expect, it } from 'vitest';
import { SLOT_WAIT_MAX_MS, SLOT_WAIT_MS, slotWaitMs } from './tenant-slot.js';

describe('slotWaitMs', () => {
  it('looks again after about SLOT_WAIT_MS near the front of the line, jittered by ±20%', () => {
    expect(slotWaitMs(0, 2, 0.5)).toBe(SLOT_WAIT_MS);
    expect(slotWaitMs(1, 2, 0)).toBe(SLOT_WAIT_MS * 0.8);
    expect(slotWaitMs(1, 2, 1)).toBe(SLOT_WAIT_MS * 1.2);
  });

  it('a round more per cap runs ahead, up to SLOT_WAIT_MAX_MS', () => {
    expect(slotWaitMs(2, 2, 0.5)).toBe(2 * SLOT_WAIT_MS);
    expect(slotWaitMs(9, 2, 0.5)).toBe(5 * SLOT_WAIT_MS);
    expect(slotWaitMs(10_000, 2, 0.5)).toBe(SLOT_WAIT_MAX_MS);
    expect(slotWaitMs(10_000, 2, 1)).toBe(SLOT_WAIT_MAX_MS * 1.2);
  });
});
