/** One bar of the usage chart: where it sits and how tall it is, in the chart's own units. */
export interface UsageBar {
  key: string;
  value: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * The bars of a chart `width` × `height` of one value per day, oldest first: each the same width
 * with a gap, scaled so the largest day reaches the top; a day of 0 has no height.
 */
export function usageBars(
  days: readonly { key: string; value: number }[],
  width: number,
  height: number,
): UsageBar[] {
  const max = Math.max(0, ...days.map((day) => day.value));
  const slot = days.length === 0 ? 0 : width / days.length;
  const gap = Math.min(2, slot / 4);
  return days.map((day, i) => {
    const barHeight = max === 0 ? 0 : (day.value / max) * height;
    return {
      key: day.key,
      value: day.value,
      x: i * slot + gap / 2,
      y: height - barHeight,
      width: slot - gap,
      height: barHeight,
    };
  });
}
