// The cell ledger as a table, newest first, under a row for the cell that is running (updated in
// place as its time grows). Clicking a row selects that cell (its band is highlighted in the
// chart); clicking it again clears the selection.

import { cellId, cellKey } from "./cells.js";
import { DASH, cellDuration, formatBytes, formatPercent, formatSeconds } from "./format.js";
import { ColumnTally, filledMask } from "./table-columns.js";

// always: shown even where every row leaves them empty, as `%gpumon cells` shows its own
const COLUMNS = [
  { title: "cell", cls: "cell", always: true },
  { title: "status", cls: "status", always: true },
  { title: "time", cls: "num", always: true },
  // tip: what a header means, on hover (alloc above the GPU's size surprises a newcomer)
  { title: "alloc", cls: "num", tip: "what the allocator handed out during the cell, freed or not: a loop of steps hands out many times what the GPU holds" },
  { title: "peak", cls: "num", tip: "the most allocated at once while the cell ran (\u2265: a sampled lower bound)" },
  { title: "kept", cls: "num", tip: "allocated memory the cell left behind" },
  { title: "GPU util", cls: "num", tip: "the GPU's mean utilization while the cell ran" },
  { title: "host \u0394", cls: "num", tip: "this kernel's host memory (RSS), end minus start" },
  { title: "held by", cls: "held", tip: "the variables and hidden references that hold what the cell kept" },
  { title: "source", cls: "source", always: true },
];
const ALWAYS = COLUMNS.reduce((mask, c, j) => (c.always ? mask | (1 << j) : mask), 0);

const STATUS_CLASS = { ok: "ok", error: "error", oom: "error", interrupted: "warn", running: "running" };

function present(x) {
  return typeof x === "number" && Number.isFinite(x);
}

function peakText(peak, exact) {
  return present(peak) ? `${exact === false ? "\u2265" : ""}${formatBytes(peak)}` : DASH;
}

/**
 * The frameworks to name in a cell's row (torch, JAX, CuPy): those it shows, when more than
 * one framework was up (`frameworks_named`) or more than one is shown; else null.
 */
function severalFrameworks(cell) {
  const list = Array.isArray(cell.frameworks) ? cell.frameworks.filter((f) => f && typeof f === "object") : [];
  return list.length > 1 || (cell.frameworks_named === true && list.length) ? list : null;
}

/** The texts of one row, in COLUMNS order (all plain strings). */
export function rowTexts(cell) {
  const several = severalFrameworks(cell);
  // with several frameworks, each one's own figure: their peaks need not coincide
  const each = (text) => several.map((f) => `${String(f.label ?? "")} ${text(f)}`).join(" \u00b7 ");
  const peak = several ? each((f) => peakText(f.peak, f.peak_exact)) : peakText(cell.peak, cell.peak_exact);
  const kept = several ? each((f) => formatBytes(f.kept)) : formatBytes(cell.kept);
  return [
    String(cell.name ?? ""),
    String(cell.status ?? ""),
    formatSeconds(cellDuration(cell)),
    formatBytes(cell.alloc, true),
    peak,
    kept,
    formatPercent(cell.util_mean),
    formatBytes(cell.host_delta, true),
    typeof cell.held_by === "string" ? cell.held_by : "",
    typeof cell.label === "string" ? cell.label : "",
  ];
}

// Rows are drawn only where the table is scrolled to: a ledger of 10,000 cells keeps a few
// dozen <tr> in the DOM. Every row has one height (texts never wrap), so a spacer row above and
// one below stand for the rest and the scroll bar is that of the whole ledger.
export const ROW_HEIGHT = 16; // CSS px, as style.js sets it; the drawn rows' own height wins
const SHOWN_HEIGHT = 220; // the scroll box's max-height (style.js): its height once rows overflow it
const OVERSCAN = 8; // rows drawn beyond each edge, so a small scroll shows no blank

export class CellTable {
  /**
   * @param {{onSelect: (key: string|null) => void, onScroll?: () => void}} o onScroll: the box
   *   scrolled (the view calls scrolled() on its next frame)
   */
  constructor({ onSelect, onScroll = () => {} }) {
    this.onSelect = onSelect;
    this.el = document.createElement("div");
    this.el.className = "nbgpumon-table-wrap nbgpumon-cells"; // the ledger's scroll box
    this.table = document.createElement("table");
    this.table.className = "nbgpumon-table";
    const thead = this.table.createTHead();
    this.head = thead.insertRow();
    for (const c of COLUMNS) {
      const th = document.createElement("th");
      th.className = c.cls;
      th.textContent = c.title;
      if (c.tip) th.title = c.tip;
      this.head.append(th);
    }
    this.tally = new ColumnTally(rowTexts);
    this.shown = -1; // the columns shown, a mask (ALWAYS and those a row fills); -1: not yet
    // the spacers are outside tbody, so `tbody tr` are the ledger's rows and no others
    this.above = spacer(thead);
    this.body = this.table.createTBody();
    this.below = spacer(this.table.createTFoot());
    this.el.append(this.table);
    this.cells = [];
    this.revision = null;
    this.highlight = null;
    this.running = null; // the running entry shown above the ledger's rows, or null
    this.runningRow = null; // its <tr>, kept across updates
    this.rows = new Map(); // cellKey -> <tr> of the ledger rows in the DOM
    this.drawn = null; // [first, end) of the rows in the DOM, running row included
    this.rowHeight = ROW_HEIGHT;
    this.measured = false;
    this.emptyRow = null;
    this.onClick = (event) => {
      const tr = event.target && event.target.closest ? event.target.closest("tr[data-key]") : null;
      if (!tr || !this.body.contains(tr)) return;
      const key = tr.dataset.key;
      this.onSelect(key === this.highlight ? null : key);
    };
    // The scroll position as the scroll event saw it: read during a frame, after the chart
    // changed the page, it would make the browser lay the page out again there and then.
    this.scrollTop = 0;
    this.onScroll = () => {
      this.scrollTop = this.el.scrollTop;
      onScroll();
    };
    this.table.addEventListener("click", this.onClick);
    this.el.addEventListener("scroll", this.onScroll, { passive: true });
  }

  /**
   * Show `cells` (oldest first, as the ledger holds them; `revision` changes when they do),
   * the `running` entry (from cells.runningCell, or null) above them, and mark the row of
   * `highlight`.
   */
  update(cells, revision, highlight, running = null) {
    const changed = revision !== this.revision || cells !== this.cells;
    const runningKey = running ? cellKey(running) : null;
    const wasRunning = this.running ? cellKey(this.running) : null;
    this.running = running;
    if (changed || runningKey !== wasRunning) {
      this.cells = cells;
      this.revision = revision;
      this.drawn = null; // the rows move: draw them again
    }
    if (changed) this.tally.sync(cells);
    this.highlight = highlight;
    this._draw();
  }

  /** Draw the rows the box is scrolled to now, if they are not those in the DOM. */
  scrolled() {
    this._draw();
  }

  /** Rows in all: the running one and the ledger's. */
  get length() {
    return this.cells.length + (this.running ? 1 : 0);
  }

  /** The entry at row `i` from the top: the running one, then the ledger newest first. */
  _at(i) {
    if (this.running) {
      if (i === 0) return this.running;
      i -= 1;
    }
    return this.cells[this.cells.length - 1 - i];
  }

  /** [first, end) of the rows to have in the DOM for the box's scroll position. */
  _window() {
    // the box's height is its max-height once the rows overflow it (and all fit otherwise);
    // the header above the rows is within the rows drawn beyond the edges
    const height = SHOWN_HEIGHT;
    const top = this.scrollTop;
    const shown = Math.ceil(height / this.rowHeight) + 1;
    // clamped: a box scrolled past the rows (the ledger just shrank) shows its last ones
    const last = Math.max(0, this.length - shown - OVERSCAN);
    const first = Math.min(last, Math.max(0, Math.floor(top / this.rowHeight) - OVERSCAN));
    return [first, Math.min(this.length, first + shown + 2 * OVERSCAN)];
  }

  _draw() {
    this._showEmpty();
    this._showColumns();
    const [first, end] = this._window();
    if (!this.drawn || this.drawn[0] !== first || this.drawn[1] !== end) {
      const rows = new Map();
      const trs = [];
      for (let i = first; i < end; i++) {
        const cell = this._at(i);
        if (cell === this.running) {
          trs.push(this._runningRow(cell));
          continue;
        }
        const key = cellKey(cell);
        const tr = this.rows.get(key) ?? this._row(cell); // a ledger row's texts never change
        rows.set(key, tr);
        trs.push(tr);
      }
      this.rows = rows;
      if (this.emptyRow && !this.length) trs.push(this.emptyRow);
      placeRows(this.body, trs);
      this.drawn = [first, end];
      this._measure();
      setHeight(this.above, first * this.rowHeight);
      setHeight(this.below, (this.length - end) * this.rowHeight);
    } else if (this.running && first === 0) {
      this._runningRow(this.running); // its time so far, in place
    }
    for (const [key, tr] of this.rows) tr.classList.toggle("selected", key === this.highlight);
    if (this.runningRow) this.runningRow.classList.toggle("selected", cellKey(this.runningRow.cell) === this.highlight);
  }

  /** The drawn rows' own height (fonts and zoom decide it), for the spacers: measured once,
   * the first time there are rows, as each measurement lays the page out. */
  _measure() {
    if (this.measured) return;
    const tr = this.body.firstChild;
    const h = tr && tr.dataset && tr.dataset.key ? tr.getBoundingClientRect().height : 0;
    if (h > 0) this.rowHeight = h;
    this.measured = h > 0;
  }

  _showEmpty() {
    if (this.length || this.emptyRow) return;
    const tr = document.createElement("tr");
    tr.className = "empty";
    const td = document.createElement("td");
    td.colSpan = COLUMNS.length;
    td.textContent = "no cells yet";
    tr.append(td);
    this.emptyRow = tr;
  }

  /** Show the columns some row fills (the running one's too), hide the others. */
  _showColumns() {
    const shown = ALWAYS | this.tally.mask | (this.running ? filledMask(rowTexts(this.running)) : 0);
    if (shown === this.shown) return;
    this.shown = shown;
    for (const tr of [this.head, ...this.rows.values(), this.runningRow]) if (tr) this._hide(tr);
  }

  /** Hide the cells of `tr` in the columns not shown. */
  _hide(tr) {
    [...tr.children].forEach((td, j) => {
      const hidden = !(this.shown & (1 << j));
      if (td.hidden !== hidden) td.hidden = hidden;
    });
  }

  /** The running entry's row: made again for another cell, else only its texts change. */
  _runningRow(running) {
    const key = cellKey(running);
    if (!this.runningRow || this.runningRow.dataset.key !== key) {
      this.runningRow = this._row(running);
      this.runningRow.classList.add("running");
    } else {
      // the same cell, later: only its texts change (the elapsed time, what it holds now)
      rowTexts(running).forEach((text, j) => {
        const td = this.runningRow.children[j];
        if (td.textContent !== text) td.textContent = text;
      });
    }
    this.runningRow.cell = running;
    return this.runningRow;
  }

  _row(cell) {
    const tr = document.createElement("tr");
    tr.dataset.key = cellKey(cell);
    tr.dataset.cell = cellId(cell);
    tr.dataset.kind = cell.kind === "region" ? "region" : "cell";
    rowTexts(cell).forEach((text, j) => {
      const td = document.createElement("td");
      const cls = COLUMNS[j].cls;
      td.className = cls;
      td.textContent = text;
      if (cls === "status") td.classList.add(`status-${STATUS_CLASS[text] || "other"}`);
      if (COLUMNS[j].title === "GPU util" && present(cell.util_max)) {
        td.title = `max ${formatPercent(cell.util_max)}`;
      }
      if (cls === "source" || cls === "held") td.title = text; // cut to the column: whole on hover
      tr.append(td);
    });
    this._hide(tr);
    return tr;
  }

  /** Scroll the row of `key` into view (after a band was clicked in the chart). */
  reveal(key) {
    let i = -1;
    if (this.running && cellKey(this.running) === key) i = 0;
    else {
      for (let k = this.cells.length - 1; k >= 0; k--) {
        if (cellKey(this.cells[k]) === key) {
          i = this.cells.length - 1 - k + (this.running ? 1 : 0);
          break;
        }
      }
    }
    if (i < 0) return;
    const head = this.table.tHead.rows[0].offsetHeight; // a click: a layout is fine here
    const top = head + i * this.rowHeight;
    const height = this.el.clientHeight || SHOWN_HEIGHT;
    const now = this.el.scrollTop;
    // nearest: only as far as it takes to have the whole row below the sticky header
    if (top - head < now) this.el.scrollTop = top - head;
    else if (top + this.rowHeight > now + height) this.el.scrollTop = top + this.rowHeight - height;
    this.scrollTop = this.el.scrollTop;
    this._draw();
  }

  destroy() {
    this.table.removeEventListener("click", this.onClick);
    this.el.removeEventListener("scroll", this.onScroll);
    this.el.remove();
  }
}

/**
 * Make `body`'s children `trs`, in order, moving as few as it takes: a scroll by a few rows
 * removes those that left and inserts those that came, and the rest stay where they are
 * (the browser restyles what moved, so moving them all would restyle every row).
 */
function placeRows(body, trs) {
  const keep = new Set(trs);
  for (const tr of [...body.children]) if (!keep.has(tr)) tr.remove();
  // what stayed is in the order it has in `trs` (rows keep their order as the box scrolls)
  let at = body.firstChild;
  for (const tr of trs) {
    if (tr === at) at = at.nextSibling;
    else body.insertBefore(tr, at);
  }
}

/** A row of one cell across the table whose height stands for rows not in the DOM. */
function spacer(section) {
  const tr = section.insertRow();
  tr.className = "spacer";
  tr.setAttribute("aria-hidden", "true");
  const td = tr.insertCell();
  td.colSpan = COLUMNS.length;
  setHeight(tr, 0);
  return tr;
}

function setHeight(tr, px) {
  const td = tr.firstChild;
  const value = `${Math.max(0, px)}px`;
  if (td.style.height !== value) td.style.height = value;
  tr.hidden = px <= 0;
}
