import { describe, expect, test } from "vitest";
import { CellStore, cellStoreFor, connectCells } from "../src/cell-store.js";
import { FakeModel } from "./fake-model.js";
import { cells } from "./protocol.js";

function row(index, start = 100 + index) {
  return { index, name: `[${index + 1}]`, count: index + 1, kind: "cell", start, end: start + 0.5, status: "ok" };
}

describe("CellStore", () => {
  test("starts from the trait and appends the rows of each cells message", () => {
    const model = new FakeModel({ cells: [row(0), row(1)] });
    connectCells(model);
    const store = cellStoreFor(model);
    expect(store.cells.map((c) => c.index)).toEqual([0, 1]);
    const before = store.revision;
    model.emit("msg:custom", ...cells(0, [row(2)], { misalign: true }));
    expect(store.cells.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(store.revision).toBe(before + 1);
    expect(store.has("cell@102")).toBe(true);
    expect(store.index.overlapping(102.2, 102.2)).toEqual([store.cells[2]]);
  });

  test("a row sent twice is kept once; rows the ledger let go of are dropped", () => {
    const store = new CellStore();
    store.setAll([row(0), row(1), row(2)]);
    expect(store.append({ type: "cells", first: 0, rows: [row(2)] })).toBe(false);
    store.append({ type: "cells", first: 2, rows: [row(3), row(4)] });
    expect(store.cells.map((c) => c.index)).toEqual([2, 3, 4]);
    expect(store.has("cell@100")).toBe(false);
  });

  test("learns each GPU's kinds of memory from the rows, well-formed ones only", () => {
    const store = new CellStore();
    const kinds = (...k) => ({ ...row(0), kinds: k });
    store.setAll([kinds({ gpu: 0, kind: "parameters", bytes: 8 }, { gpu: 0, kind: "buffers", bytes: 0 })]);
    expect([...store.kindsOnDevices([0])]).toEqual(["parameters"]); // (nothing held: not a kind)
    store.append({ type: "cells", rows: [{ ...kinds({ gpu: 1, kind: "gradients", bytes: 4 }, { gpu: 1, kind: 7, bytes: 4 }, null), index: 1, start: 101 }] });
    expect([...store.kindsOnDevices([1])]).toEqual(["gradients"]);
    expect(store.kindsOnDevices([0, 1])).toEqual(new Set(["parameters", "gradients"]));
    expect(store.kindsOnDevices([2]).size).toBe(0);
    store.setAll([]);
    expect(store.kindsOnDevices([0, 1]).size).toBe(0); // a new ledger: learnt again
  });

  test("malformed messages and rows change nothing", () => {
    const store = new CellStore();
    store.setAll([row(0)]);
    const before = store.revision;
    for (const msg of [null, { type: "cells" }, { type: "cells", rows: "x" }, { type: "cells", rows: [{ start: "x" }, null] }]) {
      expect(store.append(msg)).toBe(false);
    }
    expect(store.revision).toBe(before);
    expect(store.cells).toHaveLength(1);
  });
});
