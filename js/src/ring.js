// A bounded ring of timeline rows, stored column by column: drawing reads a handful of the
// ~120 columns of an 8-GPU timeline, and a column-major layout keeps each of those reads
// sequential in memory (row-major made the reads stride over every column: 4x slower).
//
// Storage grows by doubling up to `capacity`: 200,000 rows of a 8-GPU timeline (~120 columns)
// would be ~100 MB of Float32 if allocated up front, and most sessions never get there.

export const DEFAULT_CAPACITY = 200_000;
const INITIAL_ROWS = 1024;

/** The first index in [lo, hi) for which `before(i)` is false (`before` holds for a prefix). */
export function bisect(lo, hi, before) {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

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
    this.cols = Array.from({ length: width }, () => new Float32Array(this.cap));
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
    return this.cols[col][this.slot(i)];
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

  /** Rows ever appended (held plus dropped): logical row i is row `dropped + i` of all time. */
  get total() {
    return this.dropped + this.length;
  }

  _grow(needed) {
    if (this.cap >= this.capacity || needed <= this.cap) return;
    let cap = this.cap;
    while (cap < needed && cap < this.capacity) cap *= 2;
    cap = Math.min(cap, this.capacity);
    // Unwrap into the new arrays: the oldest row lands at 0.
    const unwrap = (src, dst) => {
      const firstPart = src.subarray(this.head, Math.min(this.head + this.length, this.cap));
      dst.set(firstPart, 0);
      if (firstPart.length < this.length) dst.set(src.subarray(0, this.length - firstPart.length), firstPart.length);
      return dst;
    };
    this.times = unwrap(this.times, new Float64Array(cap));
    this.breaks = unwrap(this.breaks, new Uint8Array(cap));
    this.cols = this.cols.map((col) => unwrap(col, new Float32Array(cap)));
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
   * Append `rows` rows: times[from..from+rows) with their values, given row-major with this
   * ring's width (as the kernel sends them). The oldest rows are dropped when full.
   */
  append(times, values, rows = times.length, from = 0) {
    const w = this.width;
    this._grow(this.length + rows);
    const cols = this.cols; // after growing: growing replaces the arrays
    for (let r = from; r < from + rows; r++) {
      const p = this._push(times[r], false);
      const o = r * w;
      for (let c = 0; c < w; c++) cols[c][p] = values[o + c];
    }
  }

  /** Append a row that marks missing data at `time`: lines are broken there. */
  appendBreak(time) {
    const p = this._push(time, true);
    for (const col of this.cols) col[p] = NaN;
  }

  /** First logical index whose time is >= t (length when none). */
  lowerBound(t) {
    return bisect(0, this.length, (i) => this.time(i) < t);
  }

  /** First logical index whose time is > t (length when none). */
  upperBound(t) {
    return bisect(0, this.length, (i) => this.time(i) <= t);
  }

  /** Logical index range [start, end) of the rows with t0 <= time <= t1. */
  window(t0, t1) {
    return { start: this.lowerBound(t0), end: this.upperBound(t1) };
  }

  /** This ring's rows under new column names: columns kept by name, new ones NaN. */
  remap(oldNames, newNames) {
    const next = new Ring(newNames.length, this.capacity);
    next._grow(this.length);
    const from = newNames.map((name) => oldNames.indexOf(name));
    for (let i = 0; i < this.length; i++) {
      const p = this.slot(i);
      const q = next._push(this.times[p], this.breaks[p] === 1);
      for (let c = 0; c < from.length; c++) {
        next.cols[c][q] = from[c] < 0 || this.breaks[p] === 1 ? NaN : this.cols[from[c]][p];
      }
    }
    return next;
  }
}
