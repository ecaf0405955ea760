// Each GPU's panels and selector entry name the kernel's view of it as Python words it:
// `cuda:N`, or that CUDA_VISIBLE_DEVICES hides it from the kernel.
import { expect, test } from "vitest";
import { panelSpecs } from "../src/chart.js";
import { cudaLabelOf, panelNameOf, unavailableOf } from "../src/devices.js";
import { columns } from "./columns.js";

const TOGGLES = { power: false, temperature: false, rss: false };
const HIDDEN = { index: 0, name: "Fake GPU", memory_total: 2 ** 34, cuda_index: null, cuda_label: "not visible to this kernel" };
const SEEN = { index: 1, name: "Fake GPU", memory_total: 2 ** 34, cuda_index: 0, cuda_label: "cuda:0" };

test("a hidden GPU's panels say it is not visible to this kernel, the other its cuda name", () => {
  const specs = panelSpecs({
    devices: [HIDDEN, SEEN],
    columns: columns("gpu0.nvml.mem_used", "gpu0.nvml.gpu_util", "gpu1.nvml.mem_used", "gpu1.torch.allocated"),
    gpu: "all",
    toggles: TOGGLES,
  });
  expect(specs.map((s) => [s.id, s.title])).toEqual([
    ["gpu0-memory", "GPU 0 memory (not visible to this kernel)"],
    ["gpu0-util", "GPU 0 utilization (not visible to this kernel)"],
    ["gpu1-memory", "GPU 1 memory (cuda:0)"],
  ]);
});

test("devices from a kernel that sends no cuda label keep the plain titles", () => {
  const { cuda_label, ...old } = SEEN;
  expect(cudaLabelOf(old)).toBe("");
  expect(cudaLabelOf(null)).toBe("");
  const specs = panelSpecs({ devices: [old], columns: columns("gpu1.nvml.mem_used"), gpu: "all", toggles: TOGGLES });
  expect(specs.map((s) => s.title)).toEqual(["GPU memory"]);
});

test("a MIG device's panels name its GPU's index and its profile, then the kernel's name", () => {
  const mig = { index: 0, name: "NVIDIA H200 MIG 1g.18gb", memory_total: 17716740096, cuda_index: 0, cuda_label: "cuda:0", mig_profile: "1g.18gb", gpu_instance: 1 };
  const specs = panelSpecs({ devices: [mig], columns: columns("gpu0.nvml.mem_used", "gpu0.nvml.mem_total", "gpu0.nvml.gpu_util"), gpu: "all", toggles: TOGGLES });
  expect(specs.map((s) => [s.id, s.title])).toEqual([
    ["gpu0-memory", "GPU 0 MIG 1g.18gb memory (cuda:0)"],
    ["gpu0-util", "GPU 0 MIG 1g.18gb utilization (cuda:0)"],
  ]);
  expect(specs[0].totalFallback).toBe(17716740096); // the instance's memory, not the GPU's
  expect(panelNameOf(SEEN, false)).toBe("GPU");
  expect(panelNameOf({ ...SEEN, mig_profile: "" }, false)).toBe("GPU 1 MIG");
});

test("a metric the device cannot give gets no line, and a panel left without one is not shown", () => {
  const mig = { index: 0, name: "NVIDIA H200 MIG 1g.18gb", cuda_index: 0, cuda_label: "cuda:0", mig_profile: "1g.18gb", unavailable: ["gpu_util", "mem_util"] };
  const specs = panelSpecs({
    devices: [mig],
    columns: columns("gpu0.nvml.mem_used", "gpu0.nvml.gpu_util", "gpu0.nvml.mem_util"),
    gpu: "all",
    toggles: TOGGLES,
  });
  expect(specs.map((s) => s.id)).toEqual(["gpu0-memory"]);
  expect(unavailableOf({ unavailable: "gpu_util" })).toEqual([]); // not a list: nothing hidden
  expect(unavailableOf({ unavailable: ["gpu_util", 3] })).toEqual(["gpu_util"]);
});
