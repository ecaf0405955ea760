// Ledger entries (the `cells` trait) as the chart and the table see them: a stable key for
// selection, the cell number for data attributes, and the time span a band covers.

/** A key that survives the ledger being trimmed to its last 500 entries. */
export function cellKey(cell) {
  return `${cell.kind === "region" ? "region" : "cell"}@${cell.start}`;
}

/** The value of `data-cell`: the execution count N of "[N]", or "" when there is none. */
export function cellId(cell) {
  return Number.isInteger(cell.count) ? String(cell.count) : "";
}

/** End time in unix seconds; a cell without an end or duration runs until `now`. */
export function cellEnd(cell, now) {
  if (Number.isFinite(cell.end)) return cell.end;
  if (Number.isFinite(cell.start) && Number.isFinite(cell.duration)) return cell.start + cell.duration;
  return now;
}

/** The well-formed entries of a `cells` trait value (anything else is skipped). */
export function validCells(value) {
  if (!Array.isArray(value)) return [];
  return value.filter((c) => c && typeof c === "object" && Number.isFinite(c.start));
}

/** The entry covering time `t` (the innermost: a region inside its cell wins), or null. */
export function cellAt(cells, t, now) {
  let found = null;
  for (const c of cells) {
    if (c.start <= t && t <= cellEnd(c, now)) {
      if (!found || c.start >= found.start) found = c;
    }
  }
  return found;
}
