// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import "./dom-shims.js";
import { createWidget } from "../src/widget.js";
import { storeFor } from "../src/store.js";
import { FakeIntersectionObserver, FakeModel, manualFrames } from "./fake-model.js";
import { cells, packHistory, samples } from "./protocol.js";
import { StubUPlot } from "./stub-uplot.js";
import { columns } from "./columns.js";
import { POINT_BUDGET, bucketColumns } from "../src/budget.js";

const GiB = 2 ** 30;
const COLUMNS = columns(
  "gpu0.nvml.mem_used", "gpu0.nvml.mem_total", "gpu0.nvml.gpu_util", "gpu0.nvml.mem_util", "gpu0.nvml.power",
  "gpu0.nvml.temperature", "gpu0.torch.allocated", "gpu0.torch.reserved", "host.rss",
);
const DEVICE = { index: 0, name: "NVIDIA H200", memory_total: 141 * GiB, cuda_index: 0 };
const XSS = "<img src=x onerror=alert(1)>";

function row(t) {
  return [t * GiB, 141 * GiB, 50, 20, 300, 60, 0.5 * t * GiB, t * GiB, 2 * GiB];
}

function cell(count, start, end, extra = {}) {
  return {
    name: `[${count}]`, count, kind: "cell", label: `x = f(${count})`, start, end,
    status: "ok", alloc: GiB, peak: 2 * GiB, peak_exact: true, kept: 512 * 2 ** 20,
    util_mean: 80, util_max: 99, host_delta: -(2 ** 20), duration: end - start, ...extra,
  };
}

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

function gpuModel(extra = {}) {
  return new FakeModel({
    columns: COLUMNS,
    devices: [DEVICE],
    history: new DataView(packHistory([100, 101], [row(1), row(2)]).buffer),
    status: "sampling every 0.1 s",
    ...extra,
  });
}

describe("a view", () => {
  test("builds the status line, the panels, the table and the data attributes", () => {
    const model = gpuModel({ cells: [cell(1, 100, 100.5), cell(2, 100.5, 101)] });
    widget.initialize({ model });
    widget.render({ model, el });
    const root = el.querySelector(".nbgpumon-widget");
    expect(root.dataset.points).toBe("2");
    expect(el.querySelector(".nbgpumon-status").textContent).toBe("sampling every 0.1 s");
    const panels = [...el.querySelectorAll("[data-panel]")].map((p) => p.dataset.panel);
    expect(panels).toEqual(["gpu0-memory", "gpu0-util"]);
    const rows = [...el.querySelectorAll(".nbgpumon-table tbody tr")];
    expect(rows.map((r) => r.dataset.cell)).toEqual(["2", "1"]); // newest first
    const texts = [...rows[0].children].map((td) => td.textContent);
    expect(texts).toEqual(["[2]", "ok", "500 ms", "+1.0 GiB", "2.0 GiB", "512 MiB", "80%", "\u22121.0 MiB", "", "x = f(2)"]);
    expect(el.querySelector("style").textContent).toContain(".u-legend"); // uPlot's CSS, inlined
  });

  test("the memory panel gets used, reserved and allocated, and a total line", () => {
    const model = gpuModel();
    widget.initialize({ model });
    widget.render({ model, el });
    const memory = StubUPlot.instances[0];
    expect(memory.opts.series.map((s) => s.label)).toEqual(["time", "used (NVML)", "reserved", "allocated"]);
    expect(memory.data[1]).toEqual([GiB, 2 * GiB]);
    memory.paint();
    const text = memory.ctx.calls.filter((c) => c[0] === "fillText").map((c) => c[1]);
    expect(text).toContain("total 141 GiB");
    expect(memory.scales.y.max).toBeGreaterThanOrEqual(141 * GiB);
  });

  test("a peak measured from samples is shown as a lower bound", () => {
    const model = gpuModel({ cells: [cell(3, 100, 101, { peak_exact: false })] });
    widget.initialize({ model });
    widget.render({ model, el });
    expect(el.querySelector("[data-cell='3']").children[4].textContent).toBe("\u22652.0 GiB");
  });

  test("two views of one model share one store, and both draw each new row", () => {
    const model = gpuModel();
    widget.initialize({ model });
    widget.render({ model, el });
    const el2 = document.createElement("div");
    widget.render({ model, el: el2 });
    model.custom(...samples(2, [102, 103], [row(3), row(4)]));
    expect(frames.pending.size).toBe(2); // one frame per view, not per message
    model.custom(...samples(4, [104], [row(5)]));
    expect(frames.pending.size).toBe(2); // coalesced
    frames.flush();
    for (const root of [el, el2].map((e) => e.querySelector(".nbgpumon-widget"))) {
      expect(root.dataset.points).toBe("5");
    }
    expect(storeFor(model).size).toBe(5);
  });

  test("nothing is redrawn when nothing changed", () => {
    const model = gpuModel();
    widget.initialize({ model });
    widget.render({ model, el });
    const memory = StubUPlot.instances[0];
    const before = memory.setDataCalls;
    model.custom(...samples(2, [101], [row(2)])); // an old row: no new data, no revision
    expect(frames.pending.size).toBe(0);
    model.custom(...samples(3, [102], [row(3)]));
    frames.flush();
    expect(memory.setDataCalls).toBe(before + 1);
  });

  test("cleanup destroys the plots, cancels the frame and removes every listener", () => {
    const model = gpuModel();
    const disconnect = widget.initialize({ model });
    const afterInitialize = model.listenerCount();
    const cleanup = widget.render({ model, el });
    expect(model.listenerCount()).toBeGreaterThan(afterInitialize);
    const store = storeFor(model);
    expect(store.listeners.size).toBe(1);
    model.custom(...samples(2, [102], [row(3)]));
    expect(frames.pending.size).toBe(1);
    cleanup();
    expect(frames.pending.size).toBe(0);
    expect(model.listenerCount()).toBe(afterInitialize);
    expect(store.listeners.size).toBe(0);
    expect(StubUPlot.instances.every((u) => u.destroyed)).toBe(true);
    expect(el.children.length).toBe(0);
    disconnect();
    expect(model.listenerCount()).toBe(0);
  });

  test("a cleaned-up view ignores later messages", () => {
    const model = gpuModel();
    widget.initialize({ model });
    const cleanup = widget.render({ model, el });
    cleanup();
    model.custom(...samples(2, [102], [row(3)]));
    model.set({ status: "changed" });
    expect(frames.pending.size).toBe(0);
  });

  test("strings from traits render as text, never as HTML", () => {
    const model = gpuModel({
      cells: [cell(12, 100, 101, { name: `[12]${XSS}`, label: XSS, status: XSS, held_by: `${XSS} 1.0 GiB` })],
      marks: [{ time: 100.5, label: XSS }],
      devices: [{ ...DEVICE, name: XSS }, { ...DEVICE, index: 1, name: XSS }],
      status: XSS,
    });
    widget.initialize({ model });
    widget.render({ model, el });
    expect(el.querySelector("img")).toBeNull();
    expect(el.querySelector(".nbgpumon-status").textContent).toBe(XSS);
    const tr = el.querySelector("[data-cell='12']");
    expect(tr.textContent).toContain(XSS);
    expect(tr.querySelector("td.source").textContent).toBe(XSS);
    expect(tr.querySelector("td.held").textContent).toBe(`${XSS} 1.0 GiB`);
    expect([...el.querySelectorAll(".nbgpumon-gpu option")].map((o) => o.textContent)).toContain(`GPU 1: ${XSS}`);
    // hover the band: the tip shows the ledger line and the label, as text
    const memory = StubUPlot.instances[0];
    memory.hover(memory.valToPos(100.5, "x") - memory.bbox.left);
    const tip = el.querySelector(".nbgpumon-tip:not([hidden])");
    expect(tip.dataset.tipCell).toBe("12");
    expect(tip.textContent).toContain(`[12]${XSS} +1.0 GiB alloc`);
    expect(tip.textContent).toContain(`\nheld by ${XSS} 1.0 GiB\n${XSS}`);
    expect(el.querySelector("img")).toBeNull();
  });

  test("clicking a table row highlights its band; clicking again clears it", () => {
    const model = gpuModel({ cells: [cell(1, 100, 100.4), cell(2, 100.6, 101)] });
    widget.initialize({ model });
    widget.render({ model, el });
    const tr = el.querySelector("[data-cell='1']");
    tr.children[0].dispatchEvent(new MouseEvent("click", { bubbles: true }));
    frames.flush();
    expect(tr.classList.contains("selected")).toBe(true);
    const memory = StubUPlot.instances.find((u) => u.root.isConnected);
    memory.ctx.calls.length = 0;
    memory.paint();
    const fills = memory.ctx.calls.filter((c) => c[0] === "fillRect");
    expect(fills.length).toBeGreaterThan(2); // two bands + the selected band's edges
    tr.children[0].dispatchEvent(new MouseEvent("click", { bubbles: true }));
    frames.flush();
    expect(tr.classList.contains("selected")).toBe(false);
  });

  test("clicking a band in the chart selects its row", () => {
    const model = gpuModel({ cells: [cell(7, 100, 101)] });
    widget.initialize({ model });
    widget.render({ model, el });
    const memory = StubUPlot.instances[0];
    memory.hover(10);
    expect(el.querySelector(".nbgpumon-tip").dataset.tipCell).toBe("7");
    memory.over.dispatchEvent(new MouseEvent("click"));
    frames.flush();
    expect(el.querySelector("[data-cell='7']").classList.contains("selected")).toBe(true);
  });

  test("bands are labelled [N] and marks drawn with their label", () => {
    const model = gpuModel({ cells: [cell(12, 100, 101)], marks: [{ time: 100.5, label: "warm-up done" }] });
    widget.initialize({ model });
    widget.render({ model, el });
    const util = StubUPlot.instances[1];
    util.paint();
    const text = util.ctx.calls.filter((c) => c[0] === "fillText").map((c) => c[1]);
    expect(text).toContain("[12]");
    expect(text).toContain("warm-up done");
  });

  test("the running cell is an open band [N] and a first row whose time grows, until it ends", () => {
    const running = { name: "[3]", count: 3, kind: "cell", label: "train()", start: 100.5, baseline: { "gpu0.torch.allocated": 0.5 * GiB, "host.rss": 2 * GiB } };
    const model = gpuModel({ cells: [cell(1, 100, 100.4)], running });
    widget.initialize({ model });
    widget.render({ model, el });
    const rows = () => [...el.querySelectorAll(".nbgpumon-table tbody tr")];
    const texts = (tr) => [...tr.children].map((td) => td.textContent);
    expect(rows().map((r) => r.dataset.cell)).toEqual(["3", "1"]); // running first
    expect(rows()[0].classList.contains("running")).toBe(true);
    expect(texts(rows()[0]).slice(0, 3)).toEqual(["[3]", "running", "500 ms"]); // 100.5 to 101
    expect(texts(rows()[0]).at(-1)).toBe("train()");

    model.custom(...samples(2, [102, 104.5], [row(3), row(4)])); // 4 s in, 1.5 GiB more allocated
    frames.flush();
    const first = rows()[0];
    expect(texts(first).slice(0, 3)).toEqual(["[3]", "running", "4.0 s"]);
    const memory = StubUPlot.instances[0];
    memory.ctx.calls.length = 0;
    memory.paint();
    const calls = memory.ctx.calls;
    expect(calls.filter((c) => c[0] === "fillText").map((c) => c[1])).toContain("[3] 4.0 s");
    // the band runs to the right edge: now
    const band = calls.find((c) => c[0] === "fillRect" && c[1] === memory.valToPos(100.5, "x"));
    expect(band[1] + band[3]).toBeCloseTo(memory.bbox.left + memory.bbox.width);
    memory.hover(memory.valToPos(103, "x") - memory.bbox.left);
    const tip = el.querySelector(".nbgpumon-tip:not([hidden])");
    expect(tip.dataset.tipCell).toBe("3");
    expect(tip.textContent).toBe("[3] running 4.0 s \u00b7 allocated +1.5 GiB so far \u00b7 host 0 B\ntrain()");
    model.custom(...samples(4, [106], [row(4)])); // the tip under a resting mouse keeps up
    frames.flush();
    expect(tip.textContent).toContain("running 5.5 s");

    first.children[0].dispatchEvent(new MouseEvent("click", { bubbles: true })); // select it
    frames.flush();
    expect(first.classList.contains("selected")).toBe(true);

    // it ends: one update brings its ledger row and clears `running`
    model.set({ cells: [cell(1, 100, 100.4), cell(3, 100.5, 106.2)], running: {} });
    frames.flush();
    expect(rows().map((r) => r.dataset.cell)).toEqual(["3", "1"]);
    expect(rows()[0].classList.contains("running")).toBe(false);
    expect(texts(rows()[0]).slice(0, 3)).toEqual(["[3]", "ok", "5.7 s"]);
    expect(rows()[0].classList.contains("selected")).toBe(true); // the selection carries over
    model.custom(...samples(5, [106.5], [row(4)])); // the mouse still rests on it
    frames.flush();
    expect(tip.textContent).toBe("[3] +1.0 GiB alloc \u00b7 peak 2.0 GiB \u00b7 kept 512 MiB \u00b7 host \u22121.0 MiB \u00b7 5.7 s \u00b7 GPU 80%\nx = f(3)");
  });

  test("a running cell before any ledger row hides the 'no cells yet' line", () => {
    const running = { name: "[1]", count: 1, kind: "cell", label: "x", start: 100.5, baseline: {} };
    const model = gpuModel({ running });
    widget.initialize({ model });
    widget.render({ model, el });
    const visible = [...el.querySelectorAll(".nbgpumon-table tbody tr:not([hidden])")];
    expect(visible.map((r) => r.textContent.slice(0, 10))).toEqual(["[1]running"]);
    model.set({ running: {} });
    frames.flush();
    expect(el.querySelector(".nbgpumon-table tbody tr:not([hidden])").textContent).toBe("no cells yet");
  });

  test("the running cell's strings render as text", () => {
    const running = { name: `[9]${XSS}`, count: 9, kind: "cell", label: XSS, start: 100.5, baseline: {} };
    const model = gpuModel({ running });
    widget.initialize({ model });
    widget.render({ model, el });
    const tr = el.querySelector("tr.running");
    expect(tr.querySelector("td.source").textContent).toBe(XSS);
    expect(tr.children[0].textContent).toBe(`[9]${XSS}`);
    expect(el.querySelector("img")).toBeNull();
  });

  test("with less data than the window, a note says how much is shown", () => {
    const model = gpuModel(); // 1 s of history
    widget.initialize({ model });
    widget.render({ model, el });
    const note = el.querySelector(".nbgpumon-shown");
    expect(note.textContent).toBe("1 s of data");
    expect(note.hidden).toBe(false);
    model.custom(...samples(2, [800], [row(3)])); // 700 s held: more than 10 min
    frames.flush();
    expect(note.hidden).toBe(true);
    el.querySelector("[data-window='3600']").click();
    frames.flush();
    expect(note.textContent).toBe("11 min 40 s of data");
    el.querySelector("[data-window='all']").click();
    frames.flush();
    expect(note.hidden).toBe(true);
  });

  test("panels scrolled out of view are not redrawn until they come back", () => {
    FakeIntersectionObserver.instances = [];
    const seen = createWidget({
      UPlot: StubUPlot,
      requestFrame: frames.requestFrame,
      cancelFrame: frames.cancelFrame,
      IntersectionObserver: FakeIntersectionObserver,
    });
    const model = gpuModel();
    seen.initialize({ model });
    const cleanup = seen.render({ model, el });
    const [observer] = FakeIntersectionObserver.instances;
    const [memory, util] = StubUPlot.instances;
    const utilPanel = el.querySelector("[data-panel='gpu0-util']");
    expect(observer.targets.has(utilPanel)).toBe(true);
    observer.report(utilPanel, false);
    expect(frames.pending.size).toBe(0); // going out of view needs no frame
    const before = [memory.setDataCalls, util.setDataCalls];
    model.custom(...samples(2, [102], [row(3)]));
    frames.flush();
    expect([memory.setDataCalls, util.setDataCalls]).toEqual([before[0] + 1, before[1]]);
    observer.report(utilPanel, true); // back in view: drawn with the row it missed
    expect(frames.flush()).toBe(1);
    expect(util.setDataCalls).toBe(before[1] + 1);
    expect(util.data[0].at(-1)).toBe(102);
    cleanup();
    expect(observer.disconnected).toBe(true);
  });

  test("the panels on screen share the frame's points budget; those off screen get none until back", () => {
    FakeIntersectionObserver.instances = [];
    const seen = createWidget({
      UPlot: StubUPlot,
      requestFrame: frames.requestFrame,
      cancelFrame: frames.cancelFrame,
      IntersectionObserver: FakeIntersectionObserver,
    });
    // 8 GPUs, 5 lines each (memory: used, torch's allocated and reserved; utilization: 2)
    const names = [];
    for (let g = 0; g < 8; g++) {
      for (const m of ["nvml.mem_used", "nvml.gpu_util", "nvml.mem_util", "torch.allocated", "torch.reserved"]) {
        names.push(`gpu${g}.${m}`);
      }
    }
    const devices = Array.from({ length: 8 }, (_, g) => ({ ...DEVICE, index: g }));
    const model = new FakeModel({ columns: columns(...names), devices, status: "sampling" });
    seen.initialize({ model });
    seen.render({ model, el });
    // 6,000 rows at 10 Hz: the 10 min window; GPU 0's memory spikes for one sample
    const times = Array.from({ length: 6000 }, (_, i) => 1000 + i / 10);
    const rows = times.map((t, i) => names.map((n, c) => (i === 4321 && c === 0 ? 99 * GiB : (1 + Math.sin(i / 50 + c)) * GiB)));
    model.custom(...samples(0, times, rows));
    const select = el.querySelector(".nbgpumon-gpu");
    select.value = "all";
    select.dispatchEvent(new Event("change"));
    frames.flush();

    const live = () => StubUPlot.instances.filter((u) => !u.destroyed);
    const panels = [...el.querySelectorAll("[data-panel]")];
    expect(panels).toHaveLength(16);
    const points = (u) => u.data[0].length * (u.data.length - 1);
    // all 16 on screen (40 lines): the budget's share, every bucket's extremes kept
    const columns16 = bucketColumns(640, 40);
    expect(columns16).toBeLessThan(640);
    expect(live().reduce((n, u) => n + points(u), 0)).toBeLessThanOrEqual(POINT_BUDGET + 40 * 4);
    const memory0 = live()[0];
    expect(Math.max(...memory0.data[1])).toBe(99 * GiB);
    const coarse = memory0.data[0].length;
    expect(coarse).toBeLessThanOrEqual(2 * columns16 + 2);

    // 11 scroll out of view: the 5 left (13 lines) are drawn again, finer; the 11 are not
    const [observer] = FakeIntersectionObserver.instances;
    const calls = () => live().map((u) => u.setDataCalls);
    const before = calls();
    for (const p of panels.slice(5)) observer.report(p, false);
    expect(frames.flush()).toBe(1);
    const after = calls();
    expect(after.slice(0, 5)).toEqual(before.slice(0, 5).map((n) => n + 1));
    expect(after.slice(5)).toEqual(before.slice(5));
    expect(memory0.data[0].length).toBeGreaterThan(coarse);
    expect(Math.max(...memory0.data[1])).toBe(99 * GiB);

    // a row arrives: only the panels on screen take it
    model.custom(...samples(6000, [1600], [names.map(() => GiB)]));
    frames.flush();
    const last = live()[15];
    expect(live()[0].data[0].at(-1)).toBe(1600);
    expect(last.data[0].at(-1)).toBeLessThan(1600);
    // one comes back: drawn at once, with the row it missed and the share of the 6 on screen
    observer.report(panels[15], true);
    expect(frames.flush()).toBe(1);
    expect(last.data[0].at(-1)).toBe(1600);
    expect(last.data[0].length).toBe(live()[0].data[0].length);
  });

  test("controls: window, toggles and GPU selection change the panels without the kernel", () => {
    const model = gpuModel({ devices: [DEVICE, { ...DEVICE, index: 1 }] });
    model.set({ columns: [...COLUMNS, ...columns("gpu1.nvml.mem_used", "gpu1.nvml.gpu_util")] });
    widget.initialize({ model });
    widget.render({ model, el });
    const panels = () => [...el.querySelectorAll("[data-panel]")].map((p) => p.dataset.panel);
    expect(panels()).toEqual(["gpu0-memory", "gpu0-util"]);

    const select = el.querySelector(".nbgpumon-gpu");
    expect(select.hidden).toBe(false);
    select.value = "1";
    select.dispatchEvent(new Event("change"));
    frames.flush();
    expect(panels()).toEqual(["gpu1-memory", "gpu1-util"]);

    select.value = "all";
    select.dispatchEvent(new Event("change"));
    for (const key of ["power", "temperature", "rss"]) {
      const box = el.querySelector(`[data-toggle=${key}]`);
      box.checked = true;
      box.dispatchEvent(new Event("change"));
    }
    frames.flush();
    expect(panels()).toEqual([
      "gpu0-memory", "gpu0-util", "gpu0-power", "gpu0-temperature", "gpu1-memory", "gpu1-util", "host-rss",
    ]);

    model.custom(...samples(0, [100, 400], [[...row(1), 1, 1], [...row(3), 1, 1]])); // 300 s held
    frames.flush();
    const live = () => StubUPlot.instances.filter((u) => !u.destroyed)[0];
    expect(live().scales.x.max - live().scales.x.min).toBe(300); // 10 min: all of it
    el.querySelector("[data-window='60']").click();
    frames.flush();
    expect(live().scales.x.max - live().scales.x.min).toBe(60);
    expect(el.querySelector("[data-window='60']").classList.contains("active")).toBe(true);
    expect(model.sent).toEqual([]);
  });

  test("a series switched off in the legend stays off when the panels are rebuilt", () => {
    const model = gpuModel();
    widget.initialize({ model });
    widget.render({ model, el });
    const memory = StubUPlot.instances[0];
    memory.opts.hooks.setSeries[0](memory, 2, { show: false }); // what a legend click fires
    el.querySelector("[data-toggle=power]").click();
    frames.flush();
    const rebuilt = StubUPlot.instances.find((u) => !u.destroyed && u.root.closest("[data-panel=gpu0-memory]"));
    expect(rebuilt).not.toBe(memory);
    expect(rebuilt.opts.series.map((x) => x.show)).toEqual([undefined, true, false, true]);
  });

  test("without a GPU only the host RSS panel is shown", () => {
    const model = new FakeModel({ columns: columns("host.rss", "host.sys_used"), devices: [] });
    widget.initialize({ model });
    widget.render({ model, el });
    model.custom(...samples(0, [1, 2], [[GiB, 0], [2 * GiB, 0]]));
    frames.flush();
    expect([...el.querySelectorAll("[data-panel]")].map((p) => p.dataset.panel)).toEqual(["host-rss"]);
    expect(el.querySelector("[data-toggle=rss]").parentElement.hidden).toBe(true);
    expect(el.querySelector(".nbgpumon-gpu").hidden).toBe(true);
    expect(el.querySelector(".nbgpumon-widget").dataset.points).toBe("2");
  });

  test("a gap in the samples draws as a break in the line", () => {
    const model = gpuModel({ history: new DataView(new ArrayBuffer(0)) });
    widget.initialize({ model });
    widget.render({ model, el });
    model.custom(...samples(0, [100, 101], [row(1), row(2)]));
    model.custom(...samples(10, [110, 111], [row(3), row(4)]));
    frames.flush();
    // the live panel: torch's lines joined it with their first values
    const memory = StubUPlot.instances.find((u) => !u.destroyed && u.root.closest("[data-panel=gpu0-memory]"));
    expect(memory.data[0]).toEqual([100, 101, 105.5, 110, 111]);
    expect(memory.data[1]).toEqual([GiB, 2 * GiB, null, 3 * GiB, 4 * GiB]);
  });
});

describe("samples a front end dropped", () => {
  test("one line says they did not arrive, then how many were sent again; no note before", () => {
    const model = gpuModel();
    widget.initialize({ model });
    widget.render({ model, el });
    model.custom(...samples(2, [102], [row(3)], { afterCell: true })); // only the main thread's
    frames.flush();
    const note = el.querySelector(".nbgpumon-note");
    expect(note.hidden).toBe(true);
    model.custom(...samples(30, [130], [row(30)], { afterCell: true })); // 3..29 never arrived
    frames.flush();
    expect(model.sent).toEqual([{ type: "resend", from: 3, to: 30 }]);
    expect(note.hidden).toBe(false);
    expect(note.textContent).toBe(
      "nbgpumon: samples sent while a cell ran did not arrive here (this front end drops what a " +
        "kernel's background thread sends): the chart moves only between cells",
    );
    const times = Array.from({ length: 27 }, (_, k) => 103 + k);
    model.custom(...samples(3, times, times.map((t) => row(t - 99)), { fill: true }));
    frames.flush();
    expect(note.textContent).toContain("; 27 were sent again after the cell, and are drawn:");
    expect(el.querySelector(".nbgpumon-widget").dataset.points).toBe(String(2 + 1 + 27 + 1));
  });

  test("a page that connected after the rows were sent fetches them with no note", () => {
    const model = gpuModel({ history_cursor: 2 }); // its history: two rows, packed long before
    widget.initialize({ model });
    widget.render({ model, el });
    model.custom(...samples(30, [130], [row(30)])); // live from the sampler's thread
    frames.flush();
    expect(model.sent).toEqual([{ type: "resend", from: 2, to: 30 }]);
    const times = Array.from({ length: 28 }, (_, k) => 102 + k);
    model.custom(...samples(2, times, times.map((t) => row(t - 99)), { fill: true }));
    frames.flush();
    const note = el.querySelector(".nbgpumon-note");
    expect(note.hidden).toBe(true);
    expect(note.textContent).toBe("");
    const drawn = el.querySelector(".nbgpumon-widget").nbgpumonTimes();
    expect(drawn.length).toBe(2 + 28 + 1);
    expect(drawn.some(Number.isNaN)).toBe(false); // the break drawn for the hole went
  });
});

describe("the by-kind toggle", () => {
  const kinds = [
    { gpu: 0, kind: "parameters", bytes: 40 * GiB },
    { gpu: 0, kind: "optimizer state", bytes: 30 * GiB },
    { gpu: 0, kind: "activations and temporaries", bytes: 20 * GiB },
    { gpu: 1, kind: "parameters", bytes: 4 * GiB }, // another GPU's: not in gpu0's panel
  ];
  const withKinds = () =>
    gpuModel({ cells: [cell(1, 100, 100.5, { kinds, kinds_text: "gpu0: parameters 1.0 GiB · …" }), cell(2, 100.5, 101)] });
  const kindFills = (memory) =>
    memory.ctx.calls.filter((c) => c[0] === "fillRect" && ["#2563eb", "#f59e0b", "#f97316"].includes(c[5]));
  const show = (model) => {
    widget.initialize({ model });
    widget.render({ model, el });
  };
  const turnKindsOn = () => {
    const box = el.querySelector("input[data-toggle='kinds']");
    box.checked = true;
    box.dispatchEvent(new Event("change"));
    frames.flush();
  };

  test("stacks each cell's memory by kind in its band, from 0, in the memory panel only", () => {
    show(withKinds());
    const memory = StubUPlot.instances[0];
    memory.paint();
    expect(kindFills(memory)).toEqual([]); // off by default
    expect(el.querySelector("input[data-toggle='kinds']").closest("label").hidden).toBe(false);
    expect(el.querySelector(".nbgpumon-kinds-legend").hidden).toBe(true);
    turnKindsOn();
    memory.ctx.calls.length = 0;
    memory.paint();
    const fills = kindFills(memory);
    expect(fills.map((c) => c[5])).toEqual(["#2563eb", "#f59e0b", "#f97316"]); // in its order
    const [params, state, transient] = fills;
    expect(params[2] + params[4]).toBeCloseTo(memory.valToPos(0, "y")); // from 0
    expect(params[4]).toBeCloseTo(memory.valToPos(0, "y") - memory.valToPos(40 * GiB, "y"));
    expect(state[2] + state[4]).toBeCloseTo(params[2]); // on top of the one before
    expect(transient[2]).toBeCloseTo(memory.valToPos(90 * GiB, "y"));
    expect(params[1]).toBeCloseTo(memory.valToPos(100, "x")); // over cell 1's band
    expect(el.querySelector(".nbgpumon-kinds-legend").hidden).toBe(false);
    const legend = el.querySelector(".nbgpumon-kinds-legend").textContent;
    expect(legend).toContain("activations and temporaries");
    expect(legend).not.toContain("gradients"); // only the kinds the cells held
    expect(legend.indexOf("parameters")).toBeLessThan(legend.indexOf("optimizer state"));
    const util = StubUPlot.instances[1];
    util.ctx.calls.length = 0;
    util.paint();
    expect(kindFills(util)).toEqual([]);
    memory.hover(memory.valToPos(100.25, "x") - memory.bbox.left);
    expect(el.querySelector(".nbgpumon-tip:not([hidden])").textContent).toContain(
      "peak by kind: gpu0: parameters 1.0 GiB · …",
    );
  });

  test("its legend names the kinds the shown GPU's cells held, as cells come", () => {
    const model = gpuModel({ cells: [cell(1, 100, 100.5)] });
    show(model);
    turnKindsOn();
    const legend = el.querySelector(".nbgpumon-kinds-legend");
    expect(legend.hidden).toBe(true); // no cell held any kind: nothing to name
    const held = [
      { gpu: 0, kind: "gradients", bytes: GiB },
      { gpu: 0, kind: "a kind of its own", bytes: GiB }, // no colour of its own: "other"
      { gpu: 1, kind: "buffers", bytes: GiB }, // another GPU's
    ];
    model.emit("msg:custom", ...cells(1, [{ ...cell(2, 100.5, 101, { kinds: held }), index: 2 }]));
    frames.flush();
    expect(legend.hidden).toBe(false);
    expect(legend.textContent.trim().split(/\s{2,}/)).toEqual(["gradients", "other"]);
    expect(legend.querySelectorAll(".nbgpumon-swatch").length).toBe(2);
  });

  test("a malformed kind is skipped, never drawn", () => {
    const bad = [{ gpu: 0, kind: XSS, bytes: "many" }, null, { gpu: 0, kind: 7, bytes: GiB }];
    show(gpuModel({ cells: [cell(1, 100, 101, { kinds: bad })] }));
    turnKindsOn();
    const memory = StubUPlot.instances[0];
    memory.ctx.calls.length = 0;
    memory.paint();
    expect(memory.ctx.calls.filter((c) => c[0] === "fillRect" && c[5] === "#94a3b8")).toEqual([]);
  });
});
