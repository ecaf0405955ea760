// The ledger's entries by time, for the chart: which cells overlap a time range (the bands to
// draw) and which one covers an instant (the band under the mouse), without a walk over all
// of them. Entries are sorted by start; each block of BLOCK of them keeps the latest end in it
// and the latest end up to it, so a query skips whole blocks that end before the range does.
// Cells follow one another and regions sit inside them, so a query touches the entries in
// range and a block or two before it; one long cell early on costs a pass over the blocks'
// maxima (10,000 cells: 157 numbers), not over the cells.

import { cellEnd } from "./cells.js";

const BLOCK = 64;

export class CellIndex {
  /**
   * @param {object[]} cells valid ledger entries (cells.validCells), in any order
   * @param {number} [now] unix seconds: the end of an entry without one (cells.cellEnd)
   */
  constructor(cells, now = NaN) {
    this.sorted = cells.slice().sort((a, b) => a.start - b.start); // nearly sorted: linear
    const n = this.sorted.length;
    this.starts = new Float64Array(n);
    this.ends = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      this.starts[i] = this.sorted[i].start;
      this.ends[i] = cellEnd(this.sorted[i], now);
    }
    const blocks = Math.ceil(n / BLOCK);
    this.blockEnd = new Float64Array(blocks); // latest end within block b
    this.prefixEnd = new Float64Array(blocks); // latest end in blocks 0..b
    let prefix = -Infinity;
    for (let b = 0; b < blocks; b++) {
      let m = -Infinity;
      for (let i = b * BLOCK; i < Math.min(n, (b + 1) * BLOCK); i++) if (this.ends[i] > m) m = this.ends[i];
      this.blockEnd[b] = m;
      prefix = Math.max(prefix, m);
      this.prefixEnd[b] = prefix;
    }
  }

  get size() {
    return this.sorted.length;
  }

  /** How many entries start at or before `t`. */
  _startedBy(t) {
    let lo = 0;
    let hi = this.starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.starts[mid] <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * The entries that overlap [min, max] (start <= max and end >= min), by start.
   * @param {number} min unix seconds
   * @param {number} max unix seconds
   * @returns {object[]}
   */
  overlapping(min, max) {
    const out = [];
    const hi = this._startedBy(max);
    for (let b = Math.floor((hi - 1) / BLOCK); b >= 0; b--) {
      if (this.prefixEnd[b] < min) break; // nothing this early reaches the range
      if (this.blockEnd[b] < min) continue;
      for (let i = Math.min(hi, (b + 1) * BLOCK) - 1; i >= b * BLOCK; i--) {
        if (this.ends[i] >= min) out.push(this.sorted[i]);
      }
    }
    return out.reverse();
  }

  /** The entry covering time `t`, the innermost (latest start: a region in its cell), or null. */
  at(t) {
    const found = this.overlapping(t, t);
    return found.length ? found[found.length - 1] : null;
  }
}
