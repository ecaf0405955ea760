// The cell ledger as a table, newest first. Clicking a row selects that cell (its band is
// highlighted in the chart); clicking it again clears the selection.

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

const STATUS_CLASS = { ok: "ok", error: "error", oom: "error", interrupted: "warn" };

function present(x) {
  return typeof x === "number" && Number.isFinite(x);
}

/** The texts of one row, in COLUMNS order (all plain strings). */
export function rowTexts(cell) {
  const peak = present(cell.peak)
    ? `${cell.peak_exact === false ? "\u2265" : ""}${formatBytes(cell.peak)}`
    : DASH;
  return [
    String(cell.name ?? ""),
    String(cell.status ?? ""),
    formatSeconds(cellDuration(cell)),
    formatBytes(cell.alloc, true),
    peak,
    formatBytes(cell.kept),
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
    this.onClick = (event) => {
      const tr = event.target && event.target.closest ? event.target.closest("tr[data-key]") : null;
      if (!tr || !this.body.contains(tr)) return;
      const key = tr.dataset.key;
      this.onSelect(key === this.highlight ? null : key);
    };
    this.table.addEventListener("click", this.onClick);
  }

  /** Show `cells` (oldest first, as the trait holds them) and mark the row of `highlight`. */
  update(cells, highlight) {
    if (cells !== this.cells) {
      this.cells = cells;
      this._fill(cells);
      this.highlight = undefined; // force the class pass below
    }
    if (highlight !== this.highlight) {
      for (const [key, tr] of this.rows) tr.classList.toggle("selected", key === highlight);
      this.highlight = highlight;
    }
  }

  _fill(cells) {
    this.rows.clear();
    const frag = document.createDocumentFragment();
    for (let i = cells.length - 1; i >= 0; i--) {
      const cell = cells[i];
      const tr = document.createElement("tr");
      const key = cellKey(cell);
      tr.dataset.key = key;
      tr.dataset.cell = cellId(cell);
      tr.dataset.kind = cell.kind === "region" ? "region" : "cell";
      const texts = rowTexts(cell);
      texts.forEach((text, j) => {
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
      this.rows.set(key, tr);
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
    }
    this.body.replaceChildren(frag);
  }

  /** Scroll the row of `key` into view (after a band was clicked in the chart). */
  reveal(key) {
    const tr = this.rows.get(key);
    if (tr && tr.scrollIntoView) tr.scrollIntoView({ block: "nearest" });
  }

  destroy() {
    this.table.removeEventListener("click", this.onClick);
    this.el.remove();
  }
}
