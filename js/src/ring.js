// A bounded columnar ring of timeline rows, and the min/max-preserving downsampler that turns
// a time window of rows into at most a few points per pixel column for uPlot.
//
// Storage grows by doubling up to `capacity`: 200,000 rows of a 8-GPU timeline (~120 columns)
// would be ~100 MB of Float32 if allocated up front, and most sessions never get there.

export const DEFAULT_CAPACITY = 200_000;
const INITIAL_ROWS = 1024;

export class Ring {
  /**
   * @param {number} width values per row (the number of timeline columns)
   * @param {number} capacity most rows held; the oldest are dropped beyond it
   */
  constructor(width, capacity = DEFAULT_CAPACITY) {
    if (!(capacity >= 1)) throw new RangeError("capacity must be >= 1");
    this.width = width;
    this.capacity = Math.floor(capacity);
    this.cap = Math.min(INITIAL_ROWS, this.capacity); // rows allocated now
    this.times = new Float64Array(this.cap);
    this.values = new Float32Array(this.cap * width);
    this.breaks = new Uint8Array(this.cap); // 1: a row that stands for missing data (a gap)
    this.head = 0; // physical index of the oldest row
    this.length = 0;
    this.dropped = 0; // rows dropped from the front since creation
  }

  /** Physical slot of logical row i (0 = oldest). */
  slot(i) {
    const p = this.head + i;
    return p >= this.cap ? p - this.cap : p;
  }

  time(i) {
    return this.times[this.slot(i)];
  }

  value(i, col) {
    return this.values[this.slot(i) * this.width + col];
  }

  isBreak(i) {
    return this.breaks[this.slot(i)] === 1;
  }

  get firstTime() {
    return this.length ? this.time(0) : NaN;
  }

  get lastTime() {
    return this.length ? this.time(this.length - 1) : NaN;
  }

  _grow(needed) {
    if (this.cap >= this.capacity || needed <= this.cap) return;
    let cap = this.cap;
    while (cap < needed && cap < this.capacity) cap *= 2;
    cap = Math.min(cap, this.capacity);
    const times = new Float64Array(cap);
    const values = new Float32Array(cap * this.width);
    const breaks = new Uint8Array(cap);
    for (let i = 0; i < this.length; i++) {
      const p = this.slot(i);
      times[i] = this.times[p];
      breaks[i] = this.breaks[p];
      values.set(this.values.subarray(p * this.width, (p + 1) * this.width), i * this.width);
    }
    this.times = times;
    this.values = values;
    this.breaks = breaks;
    this.cap = cap;
    this.head = 0;
  }

  _push(time, isBreak) {
    this._grow(this.length + 1);
    let p;
    if (this.length < this.cap) {
      p = this.slot(this.length);
      this.length += 1;
    } else {
      p = this.head; // full: overwrite the oldest
      this.head = this.head + 1 === this.cap ? 0 : this.head + 1;
      this.dropped += 1;
    }
    this.times[p] = time;
    this.breaks[p] = isBreak ? 1 : 0;
    return p;
  }

  /**
   * Append `rows` rows: times[from..from+rows) and values row-major with this ring's width.
   * Dropping the oldest rows when full.
   */
  append(times, values, rows = times.length, from = 0) {
    const w = this.width;
    this._grow(this.length + rows);
    for (let r = from; r < from + rows; r++) {
      const p = this._push(times[r], false);
      this.values.set(values.subarray(r * w, (r + 1) * w), p * w);
    }
  }

  /** Append a row that marks missing data at `time`: lines are broken there. */
  appendBreak(time) {
    const p = this._push(time, true);
    this.values.fill(NaN, p * this.width, (p + 1) * this.width);
  }

  /** First logical index whose time is >= t (length when none). */
  lowerBound(t) {
    let lo = 0;
    let hi = this.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.time(mid) < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** First logical index whose time is > t (length when none). */
  upperBound(t) {
    let lo = 0;
    let hi = this.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.time(mid) <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Logical index range [start, end) of the rows with t0 <= time <= t1. */
  window(t0, t1) {
    return { start: this.lowerBound(t0), end: this.upperBound(t1) };
  }

  /** Copy of the rows with t0 <= time <= t1: { times, values } (values row-major). */
  slice(t0, t1) {
    const { start, end } = this.window(t0, t1);
    const n = end - start;
    const times = new Float64Array(n);
    const values = new Float32Array(n * this.width);
    for (let i = 0; i < n; i++) {
      const p = this.slot(start + i);
      times[i] = this.times[p];
      values.set(this.values.subarray(p * this.width, (p + 1) * this.width), i * this.width);
    }
    return { times, values };
  }

  /** This ring's rows under new column names: columns kept by name, new ones NaN. */
  remap(oldNames, newNames) {
    const next = new Ring(newNames.length, this.capacity);
    const from = newNames.map((name) => oldNames.indexOf(name));
    next._grow(this.length);
    const row = new Float32Array(newNames.length);
    const one = new Float64Array(1);
    for (let i = 0; i < this.length; i++) {
      if (this.isBreak(i)) {
        next.appendBreak(this.time(i));
        continue;
      }
      for (let c = 0; c < from.length; c++) row[c] = from[c] < 0 ? NaN : this.value(i, from[c]);
      one[0] = this.time(i);
      next.append(one, row, 1);
    }
    return next;
  }
}

/**
 * A read-only run of rows that the downsampler walks: a Ring (low = high = value) or a
 * history snapshot (mean, low, high per value). Rows [start, end) in logical order.
 */
export function ringSegment(ring, start = 0, end = ring.length) {
  return {
    start,
    end,
    width: ring.width,
    time: (i) => ring.time(i),
    isBreak: (i) => ring.isBreak(i),
    // Returns the offset of row i's values in the arrays below.
    offset: (i) => ring.slot(i) * ring.width,
    mean: ring.values,
    low: ring.values,
    high: ring.values,
  };
}

export function historySegment(history, start = 0, end = history.rows) {
  return {
    start,
    end,
    width: history.width,
    time: (i) => history.times[i],
    isBreak: () => false,
    offset: (i) => i * history.width,
    mean: history.mean,
    low: history.low,
    high: history.high,
  };
}

/**
 * Rows of `segments` (in time order) within [t0, t1], reduced for drawing: the window is cut
 * into `buckets` equal columns (one per pixel); a bucket holding at most `perBucket` rows keeps
 * them as they are, a fuller one becomes two points (its first and last time) carrying each
 * series' minimum and maximum in the order they occurred, so spikes survive. One row either side
 * of the window is kept so lines run to the edges. A break row becomes an all-null point (uPlot
 * draws a gap there). NaN becomes null.
 *
 * @param {Array} segments from ringSegment / historySegment, ascending in time, not overlapping
 * @param {number[]} columns value indices to extract
 * @returns {{x: number[], ys: (number|null)[][]}}
 */
export function downsample(segments, columns, t0, t1, buckets, perBucket = 2) {
  const nc = columns.length;
  const x = [];
  const ys = columns.map(() => []);
  if (!(t1 > t0) || buckets < 1) {
    // Degenerate window: keep whatever lies in it, unreduced.
    buckets = 1;
    if (!(t1 >= t0)) return { x, ys };
  }
  perBucket = Math.max(2, Math.floor(perBucket));
  const dt = (t1 - t0) / buckets || 1;

  // Bucket accumulators.
  let bucket = null; // current bucket id
  let count = 0;
  const pendSeg = [];
  const pendRow = [];
  let firstT = 0;
  let lastT = 0;
  const mins = new Float64Array(nc);
  const maxs = new Float64Array(nc);
  const minAt = new Int32Array(nc);
  const maxAt = new Int32Array(nc);

  const reset = () => {
    count = 0;
    pendSeg.length = 0;
    pendRow.length = 0;
    mins.fill(Infinity);
    maxs.fill(-Infinity);
  };
  const clean = (v) => (Number.isNaN(v) ? null : v);
  const flush = () => {
    if (count === 0) return;
    if (count <= perBucket) {
      for (let k = 0; k < count; k++) {
        const s = pendSeg[k];
        const o = s.offset(pendRow[k]);
        x.push(s.time(pendRow[k]));
        for (let c = 0; c < nc; c++) ys[c].push(clean(s.mean[o + columns[c]]));
      }
    } else {
      x.push(firstT, lastT);
      for (let c = 0; c < nc; c++) {
        if (mins[c] === Infinity) {
          ys[c].push(null, null);
        } else if (minAt[c] <= maxAt[c]) {
          ys[c].push(mins[c], maxs[c]);
        } else {
          ys[c].push(maxs[c], mins[c]);
        }
      }
    }
    reset();
  };
  const pushBreak = (t) => {
    x.push(t);
    for (let c = 0; c < nc; c++) ys[c].push(null);
  };
  reset();

  // Locate the visible range in each segment, plus one row beyond each edge overall.
  const ranges = segments.map((s) => {
    let a = lowerBoundSeg(s, t0);
    let b = upperBoundSeg(s, t1);
    return { s, a, b };
  });
  // one row before t0: the last row before the window, from the latest segment that has one
  for (let k = ranges.length - 1; k >= 0; k--) {
    const r = ranges[k];
    if (r.a > r.s.start) {
      r.a -= 1;
      r.before = true;
      break;
    }
  }
  for (let k = 0; k < ranges.length; k++) {
    const r = ranges[k];
    if (r.b < r.s.end) {
      r.b += 1;
      break;
    }
  }

  let seq = 0; // order of rows within the bucket, for min/max ordering
  for (const { s, a, b } of ranges) {
    for (let i = a; i < b; i++) {
      const t = s.time(i);
      if (s.isBreak(i)) {
        flush();
        bucket = null;
        pushBreak(t);
        continue;
      }
      // Rows outside the window are their own buckets (they are only there to reach the edge).
      const id = t < t0 ? -1 : t > t1 ? buckets + 1 : Math.min(Math.floor((t - t0) / dt), buckets - 1);
      if (id !== bucket) {
        flush();
        bucket = id;
        firstT = t;
        seq = 0;
      }
      lastT = t;
      const o = s.offset(i);
      if (count < perBucket) {
        pendSeg.push(s);
        pendRow.push(i);
      }
      count += 1;
      for (let c = 0; c < nc; c++) {
        const lo = s.low[o + columns[c]];
        const hi = s.high[o + columns[c]];
        if (lo < mins[c]) {
          mins[c] = lo;
          minAt[c] = seq;
        }
        if (hi > maxs[c]) {
          maxs[c] = hi;
          maxAt[c] = seq;
        }
      }
      seq += 1;
    }
  }
  flush();
  return { x, ys };
}

function lowerBoundSeg(s, t) {
  let lo = s.start;
  let hi = s.end;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (s.time(mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function upperBoundSeg(s, t) {
  let lo = s.start;
  let hi = s.end;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (s.time(mid) <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
