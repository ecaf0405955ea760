// @vitest-environment jsdom
// The production path: the default export, with the real uPlot, on a canvas-less DOM.
import { expect, test } from "vitest";
import { canvasTexts } from "./dom-shims.js";
import widget from "../src/widget.js";
import { FakeModel } from "./fake-model.js";
import { packHistory, samples } from "./protocol.js";

const GiB = 2 ** 30;
const nextFrame = () => new Promise((resolve) => setTimeout(resolve, 50));

test("the real uPlot builds, draws bands and totals, updates and is torn down", async () => {
  const columns = ["gpu0.mem_used", "gpu0.mem_total", "gpu0.gpu_util", "gpu0.mem_util", "gpu0.allocated", "gpu0.reserved", "host.rss"];
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
  await nextFrame();
  expect(el.querySelector(".nbgpumon-widget").dataset.points).toBe("5");
  expect(canvasTexts).toContain("[4]");
  expect(canvasTexts).toContain("checkpoint");
  expect(canvasTexts).toContain("total 80.0 GiB");

  cleanup();
  expect(el.querySelector(".uplot")).toBeNull();
  disconnect();
  expect(model.listenerCount()).toBe(0);
  el.remove();
});
