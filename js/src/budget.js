// The points budget of a frame, shared by the panels on screen. Building uPlot's paths costs
// about 0.1 µs a point on the 2-core development VM, and 16 panels of four lines at two points a
// pixel column are 100,000 points: 12 ms a frame where the whole frame has 8 (docs/benchmarks.md,
// issue 13). So the lines on screen share POINT_BUDGET points: each gets the same number of
// buckets, two points each (its minimum and maximum, in the order they came), and never fewer
// than one bucket per MAX_BUCKET_PX pixels. However coarse, every bucket keeps its extremes: a
// one-sample spike is drawn at its height, at most one bucket wide. Panels off screen are not
// drawn and take no share; one coming back is drawn with the share of the panels then on screen.

export const POINT_BUDGET = 24_000; // points a frame, all lines on screen together
export const MAX_BUCKET_PX = 8; // CSS px: the widest a bucket gets, however many lines share

/**
 * The pixel columns to downsample to (Downsampler.run's `pixels`) for `lines` lines on screen
 * in panels `width` CSS px wide: the whole width while the budget allows two points a column,
 * else the budget's share, but at least 2 * width / MAX_BUCKET_PX (the downsampler's power-of-two
 * buckets are between one and two columns wide, so none is wider than MAX_BUCKET_PX).
 * @param {number} width CSS px
 * @param {number} lines series drawn in the panels on screen (hidden ones not counted)
 * @returns {number} at least 1
 */
export function bucketColumns(width, lines) {
  const full = Math.max(1, Math.round(width));
  if (!(lines > 0)) return full;
  const share = Math.floor(POINT_BUDGET / (2 * lines));
  const floor = Math.ceil((2 * full) / MAX_BUCKET_PX);
  return Math.max(1, Math.min(full, Math.max(floor, share)));
}
