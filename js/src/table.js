// The cell ledger as a table, newest first, under a row for the cell that is running (updated in
// place as its time grows). Clicking a row selects that cell (its band is highlighted in the
// chart); clicking it again clears the selection.

import { cellId, cellKey } from "./cells.js";
import { DASH, cellDuration, formatBytes, formatPercent, formatSeconds } from "./format.js";

const COLUMNS = [
  { title: "cell", cls: "cell" },
  { title: "status", cls: "status" },
  { title: "time", cls: "num" },
  { title: "alloc", cls: "num" },
  { title: "peak", cls: "num" },
  { title: "kept", cls: "num" },
  { title: "GPU util", cls: "num" },
  { title: "host \u0394", cls: "num" },
  { title: "held by", cls: "held" },
  { title: "source", cls: "source" },
];

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

export class CellTable {
  /** @param {{onSelect: (key: string|null) => void}} o */
  constructor({ onSelect }) {
    this.onSelect = onSelect;
    this.el = document.createElement("div");
    this.el.className = "nbgpumon-table-wrap";
    this.table = document.createElement("table");
    this.table.className = "nbgpumon-table";
    const head = this.table.createTHead().insertRow();
    for (const c of COLUMNS) {
      const th = document.createElement("th");
      th.className = c.cls;
      th.textContent = c.title;
      head.append(th);
    }
    this.body = this.table.createTBody();
    this.el.append(this.table);
    this.cells = null;
    this.highlight = null;
    this.rows = new Map(); // cellKey -> <tr>
    this.runningRow = null; // the <tr> of the running cell, kept across updates
    this.emptyRow = null;
    this.onClick = (event) => {
      const tr = event.target && event.target.closest ? event.target.closest("tr[data-key]") : null;
      if (!tr || !this.body.contains(tr)) return;
      const key = tr.dataset.key;
      this.onSelect(key === this.highlight ? null : key);
    };
    this.table.addEventListener("click", this.onClick);
  }

  /**
   * Show `cells` (oldest first, as the trait holds them), the `running` entry (from
   * cells.runningCell, or null) above them, and mark the row of `highlight`.
   */
  update(cells, highlight, running = null) {
    if (cells !== this.cells) {
      this.cells = cells;
      this._fill(cells);
      this.highlight = undefined; // force the class pass below
    }
    this._showRunning(running, highlight);
    if (highlight !== this.highlight) {
      for (const [key, tr] of this.rows) tr.classList.toggle("selected", key === highlight);
      this.highlight = highlight;
    }
  }

  _showRunning(running, highlight) {
    if (this.emptyRow) this.emptyRow.hidden = Boolean(running);
    if (!running) {
      if (this.runningRow) this.runningRow.remove();
      this.runningRow = null;
      return;
    }
    const key = cellKey(running);
    if (!this.runningRow || this.runningRow.dataset.key !== key) {
      if (this.runningRow) this.runningRow.remove();
      this.runningRow = this._row(running);
      this.runningRow.classList.add("running");
    } else {
      // the same cell, later: only its texts change (the elapsed time, what it holds now)
      rowTexts(running).forEach((text, j) => {
        this.runningRow.children[j].textContent = text;
      });
    }
    if (this.body.firstChild !== this.runningRow) this.body.prepend(this.runningRow);
    this.runningRow.classList.toggle("selected", key === highlight);
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
    return tr;
  }

  _fill(cells) {
    this.rows.clear();
    this.emptyRow = null;
    const frag = document.createDocumentFragment();
    for (let i = cells.length - 1; i >= 0; i--) {
      const tr = this._row(cells[i]);
      this.rows.set(tr.dataset.key, tr);
      frag.append(tr);
    }
    if (!cells.length) {
      const tr = document.createElement("tr");
      tr.className = "empty";
      const td = document.createElement("td");
      td.colSpan = COLUMNS.length;
      td.textContent = "no cells yet";
      tr.append(td);
      frag.append(tr);
      this.emptyRow = tr;
    }
    // the running row, if any, stays on top
    this.body.replaceChildren(...(this.runningRow ? [this.runningRow] : []), frag);
  }

  /** Scroll the row of `key` into view (after a band was clicked in the chart). */
  reveal(key) {
    const running = this.runningRow && this.runningRow.dataset.key === key ? this.runningRow : null;
    const tr = this.rows.get(key) ?? running;
    if (tr && tr.scrollIntoView) tr.scrollIntoView({ block: "nearest" });
  }

  destroy() {
    this.table.removeEventListener("click", this.onClick);
    this.el.remove();
  }
}
