import { describe, expect, test } from "vitest";
import { CellIndex } from "../src/cell-index.js";

function cell(k, start, end, kind = "cell") {
  return { name: `[${k}]`, count: k, kind, start, end };
}

/** What a walk over every entry finds: the reference the index must agree with. */
function overlappingByWalk(cells, min, max) {
  return cells.filter((c) => c.start <= max && c.end >= min).sort((a, b) => a.start - b.start);
}

describe("CellIndex", () => {
  test("finds the cells overlapping a range among 10,000, as a walk over all of them would", () => {
    const cells = Array.from({ length: 10_000 }, (_, k) => cell(k + 1, 1000 + k, 1000 + k + 0.6));
    const index = new CellIndex(cells);
    for (const [min, max] of [[0, 10], [999, 1001.2], [5000.7, 5000.9], [5000.61, 5060], [10999, 20000], [1000, 11000]]) {
      expect(index.overlapping(min, max)).toEqual(overlappingByWalk(cells, min, max));
    }
    expect(index.overlapping(5000.7, 5000.9)).toEqual([]); // between two cells
    expect(index.overlapping(5000.5, 5000.5).map((c) => c.count)).toEqual([4001]);
  });

  test("a long cell early on and regions inside cells are found too", () => {
    const cells = [cell(1, 0, 5000)]; // an hour-and-more cell, then short ones
    for (let k = 0; k < 3000; k++) cells.push(cell(k + 2, 5000 + k, 5000 + k + 0.5));
    // a region inside cell [2000]'s span, recorded before its cell (it ended first)
    const region = cell(2002, 6998.1, 6998.2, "region");
    cells.splice(2000, 0, region);
    const index = new CellIndex(cells);
    expect(index.overlapping(100, 200)).toEqual([cells[0]]);
    expect(index.overlapping(6998.15, 6998.15)).toEqual(overlappingByWalk(cells, 6998.15, 6998.15));
    expect(index.at(6998.15)).toBe(region); // the innermost
    expect(index.at(6998.4).count).toBe(2000);
    expect(index.at(7999.9)).toBeNull();
  });

  test("an empty ledger has nothing anywhere", () => {
    const index = new CellIndex([]);
    expect(index.overlapping(-Infinity, Infinity)).toEqual([]);
    expect(index.at(1)).toBeNull();
  });
});
