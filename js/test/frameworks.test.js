// Several frameworks' allocators on one GPU: their lines in the memory panel (each its own
// colour, joining once it has a value) and the ledger table's per-framework figures.
import { expect, test } from "vitest";
import { PALETTE, panelSpecs } from "../src/chart.js";
import { runningCell } from "../src/cells.js";
import { rowTexts } from "../src/table.js";
import { columns } from "./columns.js";

const GiB = 2 ** 30;
const DEVICE = { index: 0, name: "NVIDIA H200", memory_total: 141 * GiB, cuda_index: 0 };
const COLUMNS = columns(
  "gpu0.nvml.mem_used", "gpu0.nvml.mem_total", "gpu0.torch.reserved", "gpu0.torch.allocated",
  "gpu0.jax.reserved", "gpu0.jax.allocated", "gpu0.cupy.reserved", "gpu0.cupy.allocated", "host.rss",
);
const TOGGLES = { power: false, temperature: false, rss: false };

function memoryPanel(seen) {
  const specs = panelSpecs({ devices: [DEVICE], columns: COLUMNS, gpu: "all", toggles: TOGGLES, seen });
  return specs.find((s) => s.id === "gpu0-memory");
}

test("a framework's lines join the memory panel once its column has a value", () => {
  const jaxOnly = memoryPanel((c) => c.startsWith("gpu0.nvml") || c.startsWith("gpu0.jax"));
  expect(jaxOnly.series.map((s) => s.label)).toEqual(["used (NVML)", "pool (JAX)", "in use (JAX)"]);
  const all = memoryPanel(() => true);
  expect(all.series.map((s) => s.column)).toEqual([
    "gpu0.nvml.mem_used", "gpu0.torch.reserved", "gpu0.torch.allocated", "gpu0.jax.reserved",
    "gpu0.jax.allocated", "gpu0.cupy.reserved", "gpu0.cupy.allocated",
  ]);
  expect(new Set(all.series.map((s) => s.color)).size).toBe(all.series.length); // each its own
});

test("a panel whose lines have no value yet keeps them all", () => {
  const specs = panelSpecs({ devices: [DEVICE], columns: columns("gpu0.jax.reserved", "gpu0.jax.allocated"), gpu: "all", toggles: TOGGLES, seen: () => false });
  expect(specs[0].series.map((s) => s.label)).toEqual(["pool (JAX)", "in use (JAX)"]);
});

test("with several frameworks the table gives each one's peak and kept bytes", () => {
  const cell = {
    name: "[4]", status: "ok", duration: 1, alloc: GiB, peak: 3 * GiB, peak_exact: false, kept: 2 * GiB,
    frameworks: [
      { label: "torch", peak: 2 * GiB, peak_exact: true, kept: GiB },
      { label: "JAX", peak: GiB, peak_exact: false, kept: GiB },
    ],
  };
  const texts = rowTexts(cell);
  expect(texts[4]).toBe("torch 2.0 GiB \u00b7 JAX \u22651.0 GiB");
  expect(texts[5]).toBe("torch 1.0 GiB \u00b7 JAX 1.0 GiB");
  const one = rowTexts({ ...cell, frameworks: [cell.frameworks[0]], peak: 2 * GiB, peak_exact: true });
  expect(one[4]).toBe("2.0 GiB"); // one framework: its figure, unnamed
  const oneOfSeveral = rowTexts({ ...cell, frameworks: [cell.frameworks[1]], frameworks_named: true });
  expect(oneOfSeveral[4]).toBe("JAX \u22651.0 GiB"); // the one this cell changed, of several up
});

// A framework the front end has never heard of: the kernel's metadata alone places it.
const TOY = [
  { name: "gpu0.toy.reserved", device: 0, source: "toy", metric: "reserved", group: "framework", unit: "bytes",
    panel: "memory", label: "pool (toy)", chart: "series", color: "#123456", order: 50 },
  { name: "gpu0.toy.allocated", device: 0, source: "toy", metric: "allocated", group: "framework", unit: "bytes",
    panel: "memory", label: "in use (toy)", chart: "series", color: "", order: 51 },
];

test("a framework the front end does not know joins by its group and draws in its metric's colour", () => {
  const cols = [...columns("gpu0.nvml.mem_used"), ...TOY];
  const specs = panelSpecs({ devices: [DEVICE], columns: cols, gpu: "all", toggles: TOGGLES, seen: (c) => !c.startsWith("gpu0.toy") });
  expect(specs[0].series.map((s) => s.column)).toEqual(["gpu0.nvml.mem_used"]); // no value yet: not listed
  const all = panelSpecs({ devices: [DEVICE], columns: cols, gpu: "all", toggles: TOGGLES })[0].series;
  expect(all.map((s) => s.label)).toEqual(["used (NVML)", "pool (toy)", "in use (toy)"]);
  expect(all[0].color).toBe(cols[0].color); // the registry's
  expect(all[1].color).toBe("#123456");
  expect(all[2].color).toBe(PALETTE[2]); // no colour of its own: the palette's, for its place
});

test("a running cell adds up every framework's allocated column and the device's used, by metadata", () => {
  const cols = [...columns("gpu0.nvml.mem_used", "gpu0.torch.allocated"), ...TOY];
  const baseline = { "gpu0.nvml.mem_used": GiB, "gpu0.torch.allocated": 0, "gpu0.toy.allocated": 0, "gpu0.toy.reserved": 0 };
  const now = { "gpu0.nvml.mem_used": 4 * GiB, "gpu0.torch.allocated": GiB, "gpu0.toy.allocated": GiB, "gpu0.toy.reserved": 8 * GiB };
  const c = runningCell({ name: "[1]", start: 1, baseline }, [], 2, (name) => now[name] ?? null, cols);
  expect(c.allocated_so_far).toBe(2 * GiB);
  expect(c.gpu_used_so_far).toBe(3 * GiB);
});
