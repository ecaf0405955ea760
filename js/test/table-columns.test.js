// @vitest-environment jsdom
// The cell table leaves out the columns no row fills, as `%gpumon cells` does: on a machine
// without a GPU no column of "—" is shown; a column comes back with the first row that fills it
// and goes again when the ledger lets go of the last such row.
import { describe, expect, test } from "vitest";
import "./dom-shims.js";
import { CellTable, rowTexts } from "../src/table.js";
import { ColumnTally, filledMask } from "../src/table-columns.js";

const MiB = 2 ** 20;
const DASH = "\u2014";

function hostCell(k, extra = {}) {
  // what a cell on a machine without a GPU has: host memory and time, no allocator figures
  return {
    index: k, name: `[${k + 1}]`, count: k + 1, kind: "cell", label: `x = ${k}`,
    start: 1000 + k, end: 1000.5 + k, duration: 0.5, status: "ok", host_delta: 4 * MiB, ...extra,
  };
}

function shownHeaders(table) {
  return [...table.el.querySelectorAll("thead th")].filter((th) => !th.hidden).map((th) => th.textContent);
}

/** The texts of the cells shown in each drawn row, column by column. */
function shownColumns(table) {
  const rows = [...table.el.querySelectorAll("tbody tr[data-key]")];
  const texts = rows.map((tr) => [...tr.children].filter((td) => !td.hidden).map((td) => td.textContent));
  return texts[0].map((_, j) => texts.map((row) => row[j]));
}

function makeTable(cells, running = null) {
  const table = new CellTable({ onSelect: () => {} });
  document.body.append(table.el);
  table.update(cells, 1, null, running);
  return table;
}

describe("the cell table's columns", () => {
  test("without a GPU, only columns some row fills are shown, and none is all dashes", () => {
    const table = makeTable([hostCell(0), hostCell(1, { host_delta: null }), hostCell(2)]);
    expect(shownHeaders(table)).toEqual(["cell", "status", "time", "host \u0394", "source"]);
    for (const column of shownColumns(table)) expect(column.every((t) => t === DASH)).toBe(false);
    table.destroy();
  });

  test("cell, status, time and source stay even when every row leaves them empty", () => {
    const table = makeTable([hostCell(0, { host_delta: null, label: "" })]);
    expect(shownHeaders(table)).toEqual(["cell", "status", "time", "source"]);
    table.destroy();
  });

  test("a column comes with the first row that fills it and goes with the last one", () => {
    const cells = [hostCell(0), hostCell(1)];
    const table = makeTable(cells);
    expect(shownHeaders(table)).not.toContain("alloc");
    cells.push(hostCell(2, { alloc: 64 * MiB, peak: 64 * MiB, peak_exact: true, kept: 0 }));
    table.update(cells, 2, null);
    expect(shownHeaders(table)).toEqual(["cell", "status", "time", "alloc", "peak", "kept", "host \u0394", "source"]);
    const drawn = [...table.el.querySelectorAll("tbody tr[data-key]")];
    expect(drawn.every((tr) => tr.children[3].hidden === false)).toBe(true); // old rows too
    cells.push(hostCell(3));
    cells.splice(0, 3); // the ledger let go of its oldest rows, the GPU cell among them
    table.update(cells, 3, null);
    expect(shownHeaders(table)).toEqual(["cell", "status", "time", "host \u0394", "source"]);
    table.destroy();
  });

  test("a whole new ledger (the trait again) is counted anew", () => {
    const table = makeTable([hostCell(0, { alloc: MiB })]);
    expect(shownHeaders(table)).toContain("alloc");
    table.update([hostCell(0), hostCell(1)], 2, null);
    expect(shownHeaders(table)).not.toContain("alloc");
    table.destroy();
  });

  test("the running cell's own figures show their column while it runs", () => {
    const running = { name: "[2]", count: 2, kind: "cell", start: 2000, status: "running", running: true, duration: 1, host_delta: MiB };
    const table = makeTable([hostCell(0, { host_delta: null })], running);
    expect(shownHeaders(table)).toContain("host \u0394");
    table.update(table.cells, 1, null, null);
    expect(shownHeaders(table)).not.toContain("host \u0394");
    table.destroy();
  });
});

describe("ColumnTally", () => {
  test("a new cell at 10,000 costs its own row's texts only", () => {
    let calls = 0;
    const tally = new ColumnTally((cell) => {
      calls += 1;
      return rowTexts(cell);
    });
    const cells = Array.from({ length: 10_000 }, (_, k) => hostCell(k));
    tally.sync(cells);
    expect(calls).toBe(10_000);
    cells.push(hostCell(10_000, { alloc: MiB }));
    cells.shift(); // the ledger is full: its oldest goes as the new one comes
    tally.sync(cells);
    expect(calls).toBe(10_001);
    expect(tally.mask & filledMask(rowTexts(cells.at(-1)))).toBe(filledMask(rowTexts(cells.at(-1))));
  });

  test("filledMask counts neither a dash nor an empty text", () => {
    expect(filledMask(["[1]", DASH, "", "4 MiB"])).toBe(0b1001);
  });
});
