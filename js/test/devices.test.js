// Each GPU's panels and selector entry name the kernel's view of it as Python words it:
// `cuda:N`, or that CUDA_VISIBLE_DEVICES hides it from the kernel.
import { expect, test } from "vitest";
import { panelSpecs } from "../src/chart.js";
import { cudaLabelOf } from "../src/devices.js";
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
