// @vitest-environment jsdom
// The processes a cell started: their words in its tip (the row's `children`, shown as text) and
// the memory panel's split lines (this kernel, its children, other processes).
import { afterEach, beforeEach, expect, test } from "vitest";
import "./dom-shims.js";
import { createWidget } from "../src/widget.js";
import { panelSpecs } from "../src/chart.js";
import { ledgerLine } from "../src/format.js";
import { FakeModel, manualFrames } from "./fake-model.js";
import { packHistory } from "./protocol.js";
import { StubUPlot } from "./stub-uplot.js";
import { columns } from "./columns.js";

const GiB = 2 ** 30;
const TOGGLES = { power: false, temperature: false, rss: false };
const DEVICE = { index: 0, name: "NVIDIA H200", memory_total: 141 * GiB, cuda_index: 0, cuda_label: "cuda:0" };
const XSS = "<img src=x onerror=alert(1)>";
const CHILDREN = "python train.py \u22653.0 GiB on gpu0, 87%";
const SPLIT = ["gpu0.procs.kernel_mem", "gpu0.procs.children_mem", "gpu0.procs.others_mem"];

function cell(extra = {}) {
  return {
    name: "[5]", count: 5, kind: "cell", label: "!python train.py", start: 100, end: 101,
    status: "ok", alloc: 0, peak: 2 ** 20, peak_exact: true, kept: 0, util_mean: 0,
    util_max: 0, host_delta: 1.5 * 2 ** 20, duration: 6.3, ...extra,
  };
}

test("a cell's ledger line ends with the processes it started, before its status", () => {
  expect(ledgerLine(cell({ children: CHILDREN }))).toBe(
    "[5] 0 B alloc \u00b7 peak 1.0 MiB \u00b7 kept 0 B \u00b7 host +1.5 MiB \u00b7 6.3 s \u00b7 GPU 0% \u00b7 " +
      `children: ${CHILDREN}`,
  );
  expect(ledgerLine(cell({ children: CHILDREN, status: "error" }))).toMatch(/ \u00b7 children: python train\.py .* \u00b7 error$/);
  // none, or a row from a kernel that sends no children: the line is as it was
  expect(ledgerLine(cell({ children: "" }))).toBe(ledgerLine(cell()));
  expect(ledgerLine(cell())).not.toContain("children");
});

test("the memory panel draws this kernel, its children and the other processes", () => {
  const specs = panelSpecs({
    devices: [DEVICE],
    columns: columns("gpu0.nvml.mem_used", "gpu0.nvml.mem_total", ...SPLIT, "gpu0.torch.allocated", "gpu0.nvml.gpu_util"),
    gpu: "all",
    toggles: TOGGLES,
    seen: () => false, // no framework line has a value yet: the process lines are drawn anyway
  });
  const memory = specs.find((s) => s.id === "gpu0-memory");
  expect(memory.series.map((s) => [s.label, s.column])).toEqual([
    ["used (NVML)", "gpu0.nvml.mem_used"],
    ["this kernel", "gpu0.procs.kernel_mem"],
    ["its children", "gpu0.procs.children_mem"],
    ["other processes", "gpu0.procs.others_mem"],
  ]);
  expect(memory.totalColumn).toBe("gpu0.nvml.mem_total");
  expect(memory.series.map((s) => s.color)).toEqual(["#3b82f6", "#14b8a6", "#f97316", "#94a3b8"]);
});

let frames;
let widget;
let el;

beforeEach(() => {
  frames = manualFrames();
  StubUPlot.instances = [];
  widget = createWidget({ UPlot: StubUPlot, requestFrame: frames.requestFrame, cancelFrame: frames.cancelFrame });
  el = document.createElement("div");
  document.body.append(el);
});

afterEach(() => {
  el.remove();
});

test("a finished cell's tip names its children, as text", () => {
  const model = new FakeModel({
    columns: columns("gpu0.nvml.mem_used", "gpu0.nvml.mem_total", ...SPLIT),
    devices: [DEVICE],
    history: new DataView(packHistory([100, 101], [[GiB, 141 * GiB, 0, 3 * GiB, 0], [GiB, 141 * GiB, 0, 3 * GiB, 0]]).buffer),
    status: "sampling every 0.1 s",
    cells: [cell({ children: `${XSS} \u22653.0 GiB on gpu0, 87%` })],
  });
  widget.initialize({ model });
  widget.render({ model, el });
  const memory = StubUPlot.instances[0];
  expect(memory.series.slice(1).map((s) => s.label)).toEqual(["used (NVML)", "this kernel", "its children", "other processes"]);
  memory.hover(memory.valToPos(100.5, "x") - memory.bbox.left);
  const tip = el.querySelector(".nbgpumon-tip:not([hidden])");
  expect(tip.dataset.tipCell).toBe("5");
  expect(tip.textContent).toContain(`\u00b7 children: ${XSS} \u22653.0 GiB on gpu0, 87%\n!python train.py`);
  expect(el.querySelector("img")).toBeNull();
});
