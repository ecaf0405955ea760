// Ledger entries (the `cells` trait) as the chart and the table see them: a stable key for
// selection, the cell number for data attributes, and the time span a band covers; and the cell
// that is running (the `running` trait), drawn like an entry that grows.

/** A key that survives the ledger being trimmed (its oldest entries dropped). */
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

// Which columns a running cell's amounts add up, by their registry metadata (the widget's
// `columns`): every framework allocator's bytes in use, and the device's own view of its memory.
const ALLOCATED = (c) => c.group === "framework" && c.metric === "allocated";
const GPU_USED = (c) => c.group === "device" && c.metric === "mem_used";

/** The names of the `columns` (their metadata) that `wanted` picks. */
function namesOf(columns, wanted) {
  const list = Array.isArray(columns) ? columns : [];
  return new Set(list.filter((c) => c && typeof c === "object" && wanted(c)).map((c) => String(c.name)));
}

/**
 * Sum over the columns of `baseline` in `names` of (newest value - value at the cell's start),
 * or null when none of them has a value now.
 */
function sinceStart(baseline, names, latest) {
  let sum = null;
  for (const [column, before] of Object.entries(baseline)) {
    if (!names.has(column) || !Number.isFinite(before)) continue;
    const now = latest(column);
    if (Number.isFinite(now)) sum = (sum ?? 0) + (now - before);
  }
  return sum;
}

/**
 * The cell that is running (the `running` trait) as an entry the chart and the table draw like
 * a ledger row: an open band from its start to `now`, `duration` the time so far, and what it
 * changed so far against the readings at its start (`baseline`, by timeline column).
 * Null when no cell runs, the value is malformed, or the ledger already holds it (it ended).
 * @param {object} value the `running` trait
 * @param {object[]|{has: (key: string) => boolean}} cells valid ledger entries, or what says
 *   whether the ledger holds a key (cell-store's CellStore: no walk over 10,000 entries)
 * @param {number} now unix seconds of the newest sample
 * @param {(column: string) => number|null} latest newest value of a timeline column
 * @param {object[]} columns the timeline's columns with their metadata (the `columns` trait)
 */
export function runningCell(value, cells, now, latest, columns) {
  if (!value || typeof value !== "object" || !Number.isFinite(value.start)) return null;
  const key = cellKey({ kind: "cell", start: value.start });
  const held = Array.isArray(cells) ? cells.some((c) => cellKey(c) === key) : cells.has(key);
  if (held) return null;
  const baseline = value.baseline && typeof value.baseline === "object" ? value.baseline : {};
  const rss = baseline["host.rss"];
  const rssNow = Number.isFinite(rss) ? latest("host.rss") : null;
  return {
    name: typeof value.name === "string" ? value.name : "",
    count: value.count,
    kind: "cell",
    label: typeof value.label === "string" ? value.label : "",
    start: value.start,
    status: "running",
    running: true,
    // samples trail the kernel's clock by up to a message: a cell that just began has run 0 s
    duration: Number.isFinite(now) ? Math.max(0, now - value.start) : null,
    allocated_so_far: sinceStart(baseline, namesOf(columns, ALLOCATED), latest),
    gpu_used_so_far: sinceStart(baseline, namesOf(columns, GPU_USED), latest),
    host_delta: Number.isFinite(rssNow) ? rssNow - rss : null,
  };
}
