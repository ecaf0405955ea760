// The chart's lines for uPlot (a series' `paths`): straight segments through the downsampled
// points, broken at a null (a gap in the samples). uPlot's own `linear` builder does the same
// through several closures a point and clips its gaps with another path; with the points already
// reduced to at most two a bucket, that overhead was most of a frame's cost (docs/benchmarks.md,
// issue 13). Horizontal time scales and linear value scales only: the chart has no other.

/**
 * uPlot `paths` builder: the stroke of series `si` over data indices [i0, i1], in canvas px.
 * @param {object} u the uPlot instance (data, series, scales, bbox)
 * @returns {{stroke: Path2D, fill: null, clip: null, band: null, gaps: null, flags: number}}
 */
export function linePath(u, si, i0, i1) {
  const xs = u.data[0];
  const ys = u.data[si];
  const sx = u.scales.x;
  const sy = u.scales[u.series[si].scale ?? "y"];
  const { left, top, width, height } = u.bbox;
  const kx = width / (sx.max - sx.min);
  const ky = height / (sy.max - sy.min);
  const stroke = new Path2D();
  let pen = false; // a point drawn before this one, with no null between
  for (let i = i0; i <= i1; i++) {
    const y = ys[i];
    if (y == null) {
      pen = false;
      continue;
    }
    // rounded to whole canvas px, as uPlot's own builders do
    const px = Math.round(left + (xs[i] - sx.min) * kx);
    const py = Math.round(top + height - (y - sy.min) * ky);
    if (pen) stroke.lineTo(px, py);
    else stroke.moveTo(px, py);
    pen = true;
  }
  return { stroke, fill: null, clip: null, band: null, gaps: null, flags: 0 };
}
