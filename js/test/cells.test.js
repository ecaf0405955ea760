import { describe, expect, test } from "vitest";
import { cellEnd, cellKey, runningCell } from "../src/cells.js";
import { CellStore } from "../src/cell-store.js";
import { columns } from "./columns.js";

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const RUNNING = {
  name: "[5]", count: 5, kind: "cell", label: "train()", start: 100,
  baseline: { "gpu0.torch.allocated": GiB, "gpu1.torch.allocated": 0, "gpu0.nvml.mem_used": 3 * GiB, "host.rss": 2 * GiB },
};

// the timeline's columns with their metadata, as the `columns` trait sends them
const COLUMNS = columns("gpu0.nvml.mem_used", "gpu0.torch.allocated", "gpu1.torch.allocated", "host.rss");

function latestOf(values) {
  return (column) => (column in values ? values[column] : null);
}

describe("the running cell", () => {
  test("is an open band from its start to the newest sample, its time so far growing", () => {
    const latest = latestOf({});
    const early = runningCell(RUNNING, [], 103.5, latest, COLUMNS);
    expect(early).toMatchObject({ name: "[5]", count: 5, status: "running", running: true, duration: 3.5 });
    expect(cellEnd(early, 103.5)).toBe(103.5);
    const later = runningCell(RUNNING, [], 110, latest, COLUMNS);
    expect(later.duration).toBe(10);
    expect(cellEnd(later, 110)).toBe(110);
    expect(cellKey(later)).toBe(cellKey({ kind: "cell", start: 100 })); // the row it becomes
  });

  test("is gone once the ledger holds its row, asked of the cell store by key", () => {
    const ledger = new CellStore();
    ledger.setAll([{ index: 0, kind: "cell", start: 90, end: 95 }]);
    expect(runningCell(RUNNING, ledger, 110, latestOf({}), COLUMNS)).not.toBeNull();
    ledger.append({ type: "cells", first: 0, rows: [{ index: 1, kind: "cell", start: 100, end: 110 }] });
    expect(runningCell(RUNNING, ledger, 110, latestOf({}), COLUMNS)).toBeNull();
  });

  test("what it allocated so far is the newest reading less the one at its start", () => {
    const latest = latestOf({ "gpu0.torch.allocated": 3 * GiB, "gpu1.torch.allocated": 512 * MiB, "gpu0.nvml.mem_used": 6 * GiB, "host.rss": 2 * GiB + 12 * MiB });
    const c = runningCell(RUNNING, [], 110, latest, COLUMNS);
    expect(c.allocated_so_far).toBe(2 * GiB + 512 * MiB); // over both GPUs
    expect(c.gpu_used_so_far).toBe(3 * GiB);
    expect(c.host_delta).toBe(12 * MiB);
  });

  test("without readings (no torch, no samples yet) the amounts are missing, not zero", () => {
    const c = runningCell({ ...RUNNING, baseline: { "gpu0.torch.allocated": 0 } }, [], NaN, latestOf({ "gpu0.torch.allocated": NaN }), COLUMNS);
    expect(c.duration).toBeNull();
    expect(c.allocated_so_far).toBeNull();
    expect(c.host_delta).toBeNull();
  });

  test("a sample older than its start gives 0 s, never a negative time", () => {
    expect(runningCell(RUNNING, [], 99.8, latestOf({}), COLUMNS).duration).toBe(0);
  });

  test("none between cells, when malformed, or once the ledger holds it", () => {
    const latest = latestOf({});
    expect(runningCell({}, [], 110, latest, COLUMNS)).toBeNull();
    expect(runningCell(null, [], 110, latest, COLUMNS)).toBeNull();
    expect(runningCell({ name: "[5]", start: "soon" }, [], 110, latest, COLUMNS)).toBeNull();
    const ended = { name: "[5]", count: 5, kind: "cell", start: 100, end: 111, status: "ok" };
    expect(runningCell(RUNNING, [ended], 111, latest, COLUMNS)).toBeNull();
  });
});
