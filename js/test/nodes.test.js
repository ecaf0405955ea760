import { describe, expect, test } from "vitest";
import {
  MAX_NODE_PANELS,
  compareGpus,
  gpuLabel,
  gpuRows,
  hostsOf,
  nodePanelSpecs,
  nodeSummary,
  nodesLayout,
  validNodes,
} from "../src/nodes.js";
import { node, nodeColumns } from "./node-columns.js";

const GiB = 2 ** 30;
const hosts = (n) => Array.from({ length: n }, (_, i) => `node-${String(i + 1).padStart(2, "0")}`);

describe("the cluster's panels", () => {
  test("GPUs sort as the kernel sorts them: by number, MIG instances after their GPU", () => {
    const names = ["gpu10", "gpu2", "gpu0-mig3", "gpu0", "gpu0-mig1", "gpu1"];
    expect(names.sort(compareGpus)).toEqual(["gpu0", "gpu0-mig1", "gpu0-mig3", "gpu1", "gpu2", "gpu10"]);
    expect(gpuLabel("gpu3")).toBe("GPU 3");
    expect(gpuLabel("gpu0-mig3")).toBe("GPU 0 MIG 3");
  });

  test("a host's panels: memory and utilization, one line per GPU, the largest total as ceiling", () => {
    const columns = nodeColumns(["a"], ["gpu0-mig1", "gpu0-mig2", "gpu1"], ["mem_used", "mem_total", "gpu_util", "power"]);
    const specs = nodePanelSpecs(columns, "a");
    expect(specs.map((s) => [s.id, s.title, s.unit])).toEqual([
      ["node:a:memory", "a memory", "bytes"],
      ["node:a:util", "a utilization", "percent"],
    ]);
    expect(specs[0].series.map((s) => [s.label, s.column])).toEqual([
      ["GPU 0 MIG 1", "node:a.gpu0-mig1.mem_used"],
      ["GPU 0 MIG 2", "node:a.gpu0-mig2.mem_used"],
      ["GPU 1", "node:a.gpu1.mem_used"],
    ]);
    expect(specs[0].totalColumns).toEqual(["node:a.gpu0-mig1.mem_total", "node:a.gpu0-mig2.mem_total", "node:a.gpu1.mem_total"]);
    expect(specs[1].series.map((s) => s.color)).toEqual(specs[0].series.map((s) => s.color)); // a GPU keeps its colour
    expect(nodePanelSpecs(columns, "b")).toEqual([]);
  });

  test("all nodes: 3 nodes all get panels; of 40, the first 8 do and 32 are summary rows", () => {
    expect(nodesLayout(hosts(3))).toEqual({ panels: hosts(3), summary: [] });
    const forty = nodesLayout(hosts(40));
    expect(MAX_NODE_PANELS).toBe(8);
    expect(forty.panels).toEqual(hosts(8));
    expect(forty.summary).toEqual(hosts(40).slice(8));
  });

  test("hosts come from the nodes trait and the columns, by name", () => {
    const nodes = validNodes([node("b", ["gpu0"], 10), { host: 3 }, null, node("a", ["gpu0"], 10)]);
    expect(nodes.map((n) => n.host)).toEqual(["b", "a"]);
    expect(hostsOf(nodes, nodeColumns(["c", "a"], ["gpu0"]))).toEqual(["a", "b", "c"]);
  });

  test("a summary row adds up what a node reports now; a MIG GPU counts through its instances", () => {
    const columns = nodeColumns(["a"], ["gpu0", "gpu0-mig1", "gpu0-mig2", "gpu1"]);
    const values = {
      "node:a.gpu0.mem_used": 99 * GiB, // the parent of MIG instances: not added again
      "node:a.gpu0.mem_total": 99 * GiB,
      "node:a.gpu0-mig1.mem_used": 1 * GiB,
      "node:a.gpu0-mig1.mem_total": 10 * GiB,
      "node:a.gpu0-mig2.mem_used": 2 * GiB,
      "node:a.gpu0-mig2.mem_total": 10 * GiB,
      "node:a.gpu1.mem_used": 40 * GiB,
      "node:a.gpu1.mem_total": 80 * GiB,
      "node:a.gpu0-mig1.gpu_util": 10,
      "node:a.gpu0-mig2.gpu_util": 20,
      "node:a.gpu1.gpu_util": 90,
    };
    const latest = (name) => values[name] ?? null;
    const s = nodeSummary("a", node("a", ["gpu0", "gpu1"], 1000), columns, latest, 1012);
    expect(s).toEqual({ host: "a", gpus: "2 \u00b7 2 MIG", used: 43 * GiB, total: 100 * GiB, utilMean: 40, utilMax: 90, age: 12 });
    const empty = nodeSummary("z", undefined, columns, latest, 1012);
    expect(empty).toMatchObject({ gpus: "0", used: null, utilMean: null, age: null });
  });

  test("a host's GPU list: model with MIG profile, memory and utilization now, namespace/pod", () => {
    const columns = nodeColumns(["a"], ["gpu0-mig1", "gpu1"]);
    const values = { "node:a.gpu1.mem_used": 4 * GiB, "node:a.gpu1.mem_total": 80 * GiB, "node:a.gpu1.gpu_util": 55 };
    const n = node("a", ["gpu0-mig1", "gpu1"], 1, { gpu1: { pod: "train-0", namespace: "ml" } });
    const rows = gpuRows("a", validNodes([n])[0], columns, (c) => values[c] ?? null);
    expect(rows.map((r) => [r.label, r.model, r.used, r.total, r.util, r.pod])).toEqual([
      ["GPU 0 MIG 1", "NVIDIA H100 80GB HBM3 1g.10gb", null, null, null, ""],
      ["GPU 1", "NVIDIA H100 80GB HBM3", 4 * GiB, 80 * GiB, 55, "ml/train-0"],
    ]);
  });
});
