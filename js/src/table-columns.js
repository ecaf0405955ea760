// Which of the cell table's columns to show, decided as `%gpumon cells` decides its own
// (text.cells_table): those always shown, and those that some row fills (a text other than "—"
// or ""); a column no row fills (no GPU, no framework up yet) is left out. Counted per column
// as rows come and go, so a new cell costs its own row's texts at 10,000 cells as at 10.

import { DASH } from "./format.js";

/** Bit j set: `texts[j]` says something. */
export function filledMask(texts) {
  let mask = 0;
  texts.forEach((text, j) => {
    if (text !== DASH && text !== "") mask |= 1 << j;
  });
  return mask;
}

export class ColumnTally {
  /** @param {(cell: object) => string[]} textsOf a row's texts, in column order */
  constructor(textsOf) {
    this.textsOf = textsOf;
    this.counts = [];
    this.rows = []; // [cell, mask] of each row counted, in ledger order
  }

  /**
   * Count `cells` (oldest first, as the ledger holds them: rows are appended at the end and
   * dropped from the start); any other change counts them all again.
   */
  sync(cells) {
    while (this.rows.length && cells.length && this.rows[0][0] !== cells[0] && this.rows[0][0].index < cells[0].index) {
      this._count(this.rows.shift()[1], -1); // let go by the ledger
    }
    const n = this.rows.length;
    if (n && (n > cells.length || this.rows[0][0] !== cells[0] || this.rows[n - 1][0] !== cells[n - 1])) {
      this.counts = [];
      this.rows = [];
    }
    for (let i = this.rows.length; i < cells.length; i++) {
      const mask = filledMask(this.textsOf(cells[i]));
      this.rows.push([cells[i], mask]);
      this._count(mask, 1);
    }
  }

  /** The columns some counted row fills, as a mask. */
  get mask() {
    let mask = 0;
    this.counts.forEach((n, j) => {
      if (n > 0) mask |= 1 << j;
    });
    return mask;
  }

  _count(mask, by) {
    for (let j = 0; mask >> j; j++) {
      if (mask & (1 << j)) this.counts[j] = (this.counts[j] ?? 0) + by;
    }
  }
}
