// @vitest-environment jsdom
// The production path: the default export, with the real uPlot, on a canvas-less DOM.
import { expect, test, vi } from "vitest";
import { columns as describe } from "./columns.js";
import { canvasTexts } from "./dom-shims.js";
import widget from "../src/widget.js";
import { FakeModel } from "./fake-model.js";
import { packHistory, samples } from "./protocol.js";
import { timeLabels } from "../src/time-axis.js";

const GiB = 2 ** 30;
// The view draws on its next animation frame: wait for what that frame shows (polled, with a
// deadline), never for a fixed time.
const drawn = (check) => vi.waitFor(check, { timeout: 5000, interval: 5 });
const points = (el) => el.querySelector(".nbgpumon-widget").dataset.points;
const statusText = (el) => el.querySelector(".nbgpumon-status").textContent;

test("the real uPlot builds, draws bands and totals, updates and is torn down", async () => {
  const columns = describe("gpu0.nvml.mem_used", "gpu0.nvml.mem_total", "gpu0.nvml.gpu_util", "gpu0.nvml.mem_util", "gpu0.torch.allocated", "gpu0.torch.reserved", "host.rss");
  const row = (t) => [t * GiB, 80 * GiB, 40, 10, t * GiB, t * GiB, GiB];
  const model = new FakeModel({
    columns,
    devices: [{ index: 0, name: "NVIDIA H100", memory_total: 80 * GiB, cuda_index: 0 }],
    history: new DataView(packHistory([100, 101, 102], [row(1), row(2), row(3)]).buffer),
    cells: [{ name: "[4]", count: 4, kind: "cell", label: "train()", start: 100, end: 102.5, status: "ok", duration: 2.5 }],
    marks: [{ time: 101, label: "checkpoint" }],
    status: "sampling",
  });
  const el = document.createElement("div");
  document.body.append(el);
  const disconnect = widget.initialize({ model });
  const cleanup = widget.render({ model, el });

  const panels = el.querySelectorAll("[data-panel]");
  expect([...panels].map((p) => p.dataset.panel)).toEqual(["gpu0-memory", "gpu0-util"]);
  expect(panels[0].querySelector(".uplot canvas")).not.toBeNull();
  expect(panels[0].querySelector(".u-legend").textContent).toContain("used (NVML)");

  model.custom(...samples(3, [103, 104], [row(4), row(5)]));
  await drawn(() => expect(points(el)).toBe("5"));
  expect(canvasTexts).toContain("[4]");
  expect(canvasTexts).toContain("checkpoint");
  expect(canvasTexts).toContain("total 80.0 GiB");

  cleanup();
  expect(el.querySelector(".uplot")).toBeNull();
  disconnect();
  expect(model.listenerCount()).toBe(0);
  el.remove();
});

test("with 8 s of data in the 10 min window, the time axis reads as whole clock seconds", async () => {
  const columns = describe("host.rss");
  const times = Array.from({ length: 81 }, (_, i) => 1_796_000_000 + i / 10); // 8 s at 10 Hz
  const model = new FakeModel({ columns, devices: [], status: "sampling" });
  const el = document.createElement("div");
  document.body.append(el);
  const disconnect = widget.initialize({ model });
  const cleanup = widget.render({ model, el });
  await drawn(() => expect(statusText(el)).toBe("sampling")); // the empty chart's first paint
  canvasTexts.length = 0;
  model.custom(...samples(0, times, times.map(() => [GiB])));
  await drawn(() => expect(points(el)).toBe("81"));
  const { label } = timeLabels();
  const whole = new Set(Array.from({ length: 9 }, (_, i) => label(1_796_000_000 + i, 1)));
  const ticks = canvasTexts.filter((t) => whole.has(t));
  expect(ticks.length).toBeGreaterThanOrEqual(3); // a tick every 1 or 2 s, each a full clock time
  const clockLike = canvasTexts.filter((t) => /\d:\d\d|^:\d/.test(t));
  expect(clockLike.filter((t) => !whole.has(t))).toEqual([]); // no ":35.500", no bare ":36"
  expect(el.querySelector(".nbgpumon-shown").textContent).toBe("8 s of data");
  cleanup();
  disconnect();
  el.remove();
});

test("4 s of data on a wide chart: whole-second ticks, not half seconds", async () => {
  const times = Array.from({ length: 41 }, (_, i) => 1_796_000_000 + i / 10);
  const model = new FakeModel({ columns: describe("host.rss"), devices: [], status: "sampling" });
  const el = document.createElement("div");
  Object.defineProperty(el, "clientWidth", { value: 1200 }); // room for a label every 0.5 s
  document.body.append(el);
  const disconnect = widget.initialize({ model });
  const cleanup = widget.render({ model, el });
  await drawn(() => expect(statusText(el)).toBe("sampling")); // the empty chart's first paint
  canvasTexts.length = 0;
  model.custom(...samples(0, times, times.map(() => [GiB])));
  await drawn(() => expect(points(el)).toBe("41"));
  const { label } = timeLabels();
  const whole = Array.from({ length: 5 }, (_, i) => label(1_796_000_000 + i, 1));
  expect(canvasTexts.filter((t) => /\d:\d\d/.test(t))).toEqual(whole); // every second, no tenths
  cleanup();
  disconnect();
  el.remove();
});
