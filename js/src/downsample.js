// Turning the rows in view into at most two points per pixel column for uPlot, keeping every
// series' minimum and maximum so one-sample spikes survive — incrementally, because the chart
// redraws on every new message and a full pass over 100k rows x 40 series each time costs more
// than a frame.
//
// Buckets lie on a grid of absolute time (a power-of-two number of seconds wide), so a bucket
// that has closed never changes: as the window slides or new rows arrive only the open bucket
// and the new rows are reduced again. Closed buckets are kept until they leave the window, or
// until anything other than an append changes the data (the store's epoch), the columns drawn,
// or the bucket width. The bucket width follows the points budget (budget.js): it changes when
// panels scroll in or out of view, so the reductions of the last few widths are kept, and
// scrolling back and forth resumes them instead of walking every row again.

import { bisect } from "./ring.js";

/**
 * Row sources the reducer walks, oldest first: the live ring (low = high = mean) or a decoded
 * history snapshot (mean, low and high per column). Rows [start, end) in logical order; `pos(i)`
 * is row i's index into the column arrays.
 */
export function ringSegment(ring, start = 0, end = ring.length) {
  return {
    start,
    end,
    ring,
    time: (i) => ring.time(i),
    isBreak: (i) => ring.isBreak(i),
    pos: (i) => ring.slot(i),
    mean: ring.cols,
    low: ring.cols,
    high: ring.cols,
  };
}

export function historySegment(history, start = 0, end = history.rows) {
  return {
    start,
    end,
    ring: null,
    time: (i) => history.times[i],
    isBreak: () => false,
    pos: (i) => i,
    mean: history.mean,
    low: history.low,
    high: history.high,
  };
}

/** The bucket width in seconds for `span` seconds over `pixels` columns: a power of two. */
export function bucketSeconds(span, pixels) {
  const raw = span / Math.max(1, pixels);
  return 2 ** Math.ceil(Math.log2(raw > 1e-6 ? raw : 1e-6));
}

class Points {
  constructor(n) {
    this.x = [];
    this.ys = Array.from({ length: n }, () => []);
  }
}

const clean = (v) => (Number.isNaN(v) ? null : v);

/**
 * Reduce rows [from, to) of each part ({seg, from, to}, in time order) into `closed` (buckets
 * that a later row has closed) and `open` (the last bucket). Returns where the open bucket
 * starts ({seg, row}) or, when none is open, {seg: null}: resuming a fresh pass there gives the
 * same points.
 */
function reduce(parts, columns, dt, closed, open) {
  const nc = columns.length;
  const mins = new Float64Array(nc);
  const maxs = new Float64Array(nc);
  const minAt = new Int32Array(nc);
  const maxAt = new Int32Array(nc);
  const keepSeg = [];
  const keepRow = [];
  let bucket = null;
  let count = 0;
  let firstT = 0;
  let lastT = 0;
  let startSeg = null;
  let startRow = 0;

  const flush = (out) => {
    if (count === 0) return;
    if (count <= 2) {
      for (let k = 0; k < count; k++) {
        const s = keepSeg[k];
        const p = s.pos(keepRow[k]);
        out.x.push(s.time(keepRow[k]));
        for (let c = 0; c < nc; c++) out.ys[c].push(clean(s.mean[columns[c]][p]));
      }
    } else {
      out.x.push(firstT, lastT);
      for (let c = 0; c < nc; c++) {
        const ys = out.ys[c];
        if (mins[c] === Infinity) ys.push(null, null);
        else if (minAt[c] <= maxAt[c]) ys.push(mins[c], maxs[c]);
        else ys.push(maxs[c], mins[c]);
      }
    }
    count = 0;
    keepSeg.length = 0;
    keepRow.length = 0;
  };

  for (const { seg, from, to } of parts) {
    const lows = columns.map((c) => seg.low[c]);
    const highs = columns.map((c) => seg.high[c]);
    for (let i = from; i < to; i++) {
      const t = seg.time(i);
      if (seg.isBreak(i)) {
        flush(closed);
        bucket = null;
        closed.x.push(t);
        for (let c = 0; c < nc; c++) closed.ys[c].push(null);
        startSeg = null;
        continue;
      }
      const id = Math.floor(t / dt);
      if (id !== bucket) {
        flush(closed);
        bucket = id;
        firstT = t;
        mins.fill(Infinity);
        maxs.fill(-Infinity);
        startSeg = seg;
        startRow = i;
      }
      lastT = t;
      if (count < 2) {
        keepSeg.push(seg);
        keepRow.push(i);
      }
      const p = seg.pos(i);
      for (let c = 0; c < nc; c++) {
        const lo = lows[c][p];
        const hi = highs[c][p];
        if (lo < mins[c]) {
          mins[c] = lo;
          minAt[c] = count;
        }
        if (hi > maxs[c]) {
          maxs[c] = hi;
          maxAt[c] = count;
        }
      }
      count += 1;
    }
  }
  flush(open);
  return { seg: startSeg, row: startRow };
}

function lowerBound(seg, t) {
  return bisect(seg.start, seg.end, (i) => seg.time(i) < t);
}

/** The time of the last row before `t` in `segments`, or NaN. */
function timeBefore(segments, t) {
  for (let k = segments.length - 1; k >= 0; k--) {
    const s = segments[k];
    const i = lowerBound(s, t);
    if (i > s.start) return s.time(i - 1);
  }
  return NaN;
}

/** Index of the first element of sorted `xs` that is >= t. */
function firstAtOrAfter(xs, t) {
  return bisect(0, xs.length, (i) => xs[i] < t);
}

// Reductions kept, one per bucket width and set of columns (the most recently used).
const KEPT = 4;

export class Downsampler {
  constructor() {
    this.caches = new Map(); // `${dt}|${columns}` -> reduction, least recently used first
    this.rowsReduced = 0; // rows the last run walked (what caching saves shows here)
  }

  /**
   * Points for the rows of `store` from `t0` to the newest, over `pixels` columns: a bucket
   * holding at most two rows keeps them as they are; a fuller one becomes two points (its first
   * and last time) carrying each series' minimum and maximum in the order they occurred. The
   * bucket holding the last row before `t0` is included so lines run to the left edge. A break
   * row becomes an all-null point (uPlot draws a gap there); NaN becomes null.
   *
   * @param {import("./store.js").Store} store
   * @param {number[]} columns value indices to extract
   * @returns {{x: number[], ys: (number|null)[][]}}
   */
  run(store, columns, t0, pixels) {
    const segments = store.segments();
    const t1 = store.lastTime;
    if (!segments.length || !Number.isFinite(t1)) return { x: [], ys: columns.map(() => []) };
    const dt = bucketSeconds(Math.max(t1 - t0, 0), pixels);
    const before = timeBefore(segments, t0);
    const from = Math.floor((Number.isFinite(before) ? before : t0) / dt) * dt;
    const key = `${dt}|${columns.join(",")}`;
    const ring = store.ring;

    let c = this.caches.get(key);
    this.caches.delete(key); // put back last: the most recently used
    const resumable =
      c &&
      c.epoch === store.epoch &&
      c.ring === ring &&
      ring.length > 0 &&
      c.from <= from &&
      c.resume >= ring.dropped;
    if (!resumable) {
      c = { key, epoch: store.epoch, ring, from, resume: 0, closed: new Points(columns.length) };
      const parts = segments.map((seg) => ({ seg, from: lowerBound(seg, from), to: seg.end }));
      return this._finish(c, parts, columns, dt, from);
    }
    // Resume at the open bucket's first row: everything before it is final.
    const parts = [{ seg: segments[segments.length - 1], from: c.resume - ring.dropped, to: ring.length }];
    return this._finish(c, parts, columns, dt, from);
  }

  _finish(c, parts, columns, dt, from) {
    const open = new Points(columns.length);
    this.rowsReduced = parts.reduce((n, p) => n + Math.max(0, p.to - p.from), 0);
    const start = reduce(parts, columns, dt, c.closed, open);
    const ring = c.ring;
    let keep = true;
    if (start.seg === null) c.resume = ring.total; // nothing open: resume after the last row
    else if (start.seg.ring === ring) c.resume = ring.dropped + start.row;
    else keep = false; // the open bucket starts in the history: no resuming into it
    if (keep) {
      this.caches.set(c.key, c);
      for (const k of this.caches.keys()) {
        if (this.caches.size <= KEPT) break;
        this.caches.delete(k);
      }
    }

    // Forget closed buckets that have left the window.
    const cut = firstAtOrAfter(c.closed.x, from);
    if (cut > 0) {
      c.closed.x.splice(0, cut);
      for (const ys of c.closed.ys) ys.splice(0, cut);
    }
    c.from = from;
    // New arrays each time: uPlot keeps the ones it is given.
    return { x: c.closed.x.concat(open.x), ys: c.closed.ys.map((ys, k) => ys.concat(open.ys[k])) };
  }
}
