// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import "./dom-shims.js";
import { createWidget } from "../src/widget.js";
import { FakeModel, manualFrames } from "./fake-model.js";
import { node, nodeColumns } from "./node-columns.js";
import { packHistory, samples } from "./protocol.js";
import { StubUPlot } from "./stub-uplot.js";
import { columns } from "./columns.js";

const GiB = 2 ** 30;
const XSS = "<img src=x onerror=alert(1)>";
const NOW = 2000;
const LOCAL = columns("gpu0.nvml.mem_used", "gpu0.nvml.mem_total", "gpu0.nvml.gpu_util", "host.rss");
const DEVICE = { index: 0, name: "NVIDIA H200", memory_total: 141 * GiB, cuda_index: 0 };
const hostNames = (n) => Array.from({ length: n }, (_, i) => `node-${String(i + 1).padStart(2, "0")}`);

let frames;
let widget;
let el;

beforeEach(() => {
  frames = manualFrames();
  StubUPlot.instances = [];
  widget = createWidget({ UPlot: StubUPlot, requestFrame: frames.requestFrame, cancelFrame: frames.cancelFrame, now: () => NOW });
  el = document.createElement("div");
  document.body.append(el);
});

afterEach(() => {
  el.remove();
});

/**
 * A model whose cluster has `hosts`, each with `gpus`: memory used (host k, GPU j) = (k + j + 1)
 * GiB of 80 GiB, utilization 10 (k + 1) + j %, two answers (the newest at NOW - 5).
 */
function clusterModel(hosts, gpus = ["gpu0", "gpu1"]) {
  const cols = nodeColumns(hosts, gpus);
  const value = (c) => {
    const k = hosts.indexOf(c.node);
    const j = gpus.indexOf(c.gpu);
    return { mem_used: (k + j + 1) * GiB, mem_total: 80 * GiB, gpu_util: 10 * (k + 1) + j }[c.metric];
  };
  const row = cols.map(value);
  return new FakeModel({
    columns: LOCAL,
    devices: [DEVICE],
    history: packHistory([NOW - 20, NOW - 10], [[GiB, 141 * GiB, 5, GiB], [GiB, 141 * GiB, 6, GiB]]),
    node_columns: cols,
    node_history: packHistory([NOW - 20, NOW - 5], [row, row]),
    nodes: hosts.map((h) => node(h, gpus, NOW - 5)),
    cluster_status: "prometheus: 3 nodes every 15 s",
  });
}

function show(model) {
  widget.initialize({ model });
  const cleanup = widget.render({ model, el });
  frames.flush();
  return cleanup;
}

/** The panels shown (this kernel's stay, hidden, while other nodes are shown). */
const panels = () => [...el.querySelectorAll("[data-panel]")].filter((p) => !p.closest("[hidden]")).map((p) => p.dataset.panel);
const nodePlots = () => StubUPlot.instances.filter((u) => !u.destroyed && u.root.closest(".nbgpumon-nodes"));
const hostSelect = () => el.querySelector(".nbgpumon-host-select");
function choose(value) {
  hostSelect().value = value;
  hostSelect().dispatchEvent(new Event("change"));
  frames.flush();
}
const plotOf = (id) => StubUPlot.instances.find((u) => !u.destroyed && u.root.closest(`[data-panel="${id}"]`));

describe("the host selector", () => {
  test("appears only once other nodes answered, and starts on this kernel's panels", () => {
    const model = clusterModel([]);
    model.state.nodes = [];
    show(model);
    expect(el.querySelector(".nbgpumon-host").hidden).toBe(true);
    expect(panels()).toEqual(["gpu0-memory", "gpu0-util"]);

    const other = clusterModel(["a", "b", "c"]);
    model.set({ node_columns: other.get("node_columns"), node_history: other.get("node_history"), nodes: other.get("nodes") });
    frames.flush();
    expect(el.querySelector(".nbgpumon-host").hidden).toBe(false);
    expect(el.querySelector(".nbgpumon-host").textContent).toContain("node");
    const options = [...hostSelect().options].map((o) => [o.value, o.textContent]);
    expect(options).toEqual([
      ["local", "this kernel"], ["all", "all nodes"], ["host:a", "a"], ["host:b", "b"], ["host:c", "c"],
    ]);
    expect(hostSelect().value).toBe("local");
    expect(panels()).toEqual(["gpu0-memory", "gpu0-util"]); // unchanged until a node is chosen
  });

  test("one host: its memory and utilization panels, a line per GPU, and its GPU list", () => {
    show(clusterModel(["a", "b", "c"]));
    choose("host:b");
    expect(panels()).toEqual(["node:b:memory", "node:b:util"]);
    const memory = plotOf("node:b:memory");
    expect(memory.opts.series.map((s) => s.label)).toEqual(["time", "GPU 0", "GPU 1"]);
    expect(memory.data[1]).toEqual([2 * GiB, 2 * GiB]); // host b is k = 1: GPU 0 uses 2 GiB
    expect(memory.data[2]).toEqual([3 * GiB, 3 * GiB]);
    expect(plotOf("node:b:util").data.slice(1)).toEqual([[20, 20], [21, 21]]);
    memory.paint();
    expect(memory.ctx.calls.some((c) => c[0] === "fillText" && c[1] === "total 80.0 GiB")).toBe(true);
    const gpus = [...el.querySelectorAll(".nbgpumon-gpus tbody tr")].map((tr) => [...tr.children].map((td) => td.textContent));
    expect(gpus).toEqual([
      ["GPU 0", "NVIDIA H100 80GB HBM3", "2.0 GiB / 80.0 GiB", "20%", "\u2014"],
      ["GPU 1", "NVIDIA H100 80GB HBM3", "3.0 GiB / 80.0 GiB", "21%", "\u2014"],
    ]);
    expect(el.querySelector(".nbgpumon-chart").hidden).toBe(true); // this kernel's, meanwhile
    expect(el.querySelector(".nbgpumon-gpu").hidden).toBe(true);
    expect(el.querySelector(".nbgpumon-cluster-status").textContent).toBe("prometheus: 3 nodes every 15 s");

    choose("local"); // back: this kernel's panels, and no node panel left behind
    expect(panels()).toEqual(["gpu0-memory", "gpu0-util"]);
    expect(nodePlots().length).toBe(0);
  });

  test("all nodes with 3 nodes: each its panels, no summary", () => {
    show(clusterModel(["a", "b", "c"]));
    choose("all");
    expect(panels()).toEqual(["node:a:memory", "node:a:util", "node:b:memory", "node:b:util", "node:c:memory", "node:c:util"]);
    expect(el.querySelector(".nbgpumon-node-summary").hidden).toBe(true);
    expect(el.querySelector(".nbgpumon-node-gpus").hidden).toBe(true);
  });

  test("all nodes with 40 nodes: 8 nodes' panels, a summary row for each other; a row shows its host", () => {
    const hosts = hostNames(40);
    show(clusterModel(hosts));
    choose("all");
    expect(panels().length).toBe(16);
    expect(panels().slice(0, 2)).toEqual(["node:node-01:memory", "node:node-01:util"]);
    expect(nodePlots().length).toBe(16);
    const rows = [...el.querySelectorAll(".nbgpumon-summary tbody tr")];
    expect(rows.map((r) => r.dataset.host)).toEqual(hosts.slice(8));
    expect(el.querySelector(".nbgpumon-node-note").textContent).toContain("32 more nodes");
    // node-09 is k = 8: GPUs use 9 and 10 GiB of 80 each, at 90% and 91%; answered 5 s ago
    expect([...rows[0].children].map((td) => td.textContent)).toEqual([
      "node-09", "2", "19.0 GiB / 160 GiB", "91%", "91%", "5 s ago",
    ]);
    rows[0].click();
    frames.flush();
    expect(hostSelect().value).toBe("host:node-09");
    expect(panels()).toEqual(["node:node-09:memory", "node:node-09:util"]);
    expect(nodePlots().length).toBe(2);
  });

  test("host names and labels render as text, never as HTML", () => {
    const model = clusterModel([XSS, "b"]);
    model.state.nodes = [node(XSS, ["gpu0", "gpu1"], NOW - 5, { gpu0: { pod: XSS, namespace: XSS, model: XSS } })];
    const hosts = [...Array(9).keys()].map((i) => `${XSS}${i}`);
    show(model);
    expect([...hostSelect().options].map((o) => o.textContent)).toContain(XSS);
    choose(`host:${XSS}`);
    expect(el.querySelector(".nbgpumon-nodes .nbgpumon-panel-title").textContent).toBe(`${XSS} memory`);
    const first = el.querySelector(".nbgpumon-gpus tbody tr");
    expect(first.children[1].textContent).toBe(XSS);
    expect(first.children[4].textContent).toBe(`${XSS}/${XSS}`);
    expect(el.querySelector("img")).toBeNull();

    // and in the summary table, beyond 8 nodes
    const many = clusterModel(hosts);
    model.set({ node_columns: many.get("node_columns"), node_history: many.get("node_history"), nodes: many.get("nodes") });
    choose("all");
    expect(el.querySelector(".nbgpumon-summary tbody tr td").textContent).toBe(`${XSS}8`);
    expect(el.querySelector("img")).toBeNull();
  });

  test("rows the kernel streams join the node panels; a new host's columns keep the rows", () => {
    const model = clusterModel(["a"], ["gpu0"]);
    show(model);
    choose("host:a");
    const cols = model.get("node_columns"); // a.gpu0: gpu_util, mem_total, mem_used
    const [msg, buffers] = samples(2, [NOW], [[70, 80 * GiB, 7 * GiB]]);
    model.custom({ ...msg, type: "node_samples", version: 1 }, buffers);
    frames.flush();
    expect(plotOf("node:a:memory").data[1]).toEqual([GiB, GiB, 7 * GiB]);
    // host z answers: its columns join (after a's), and a's rows stay
    const grown = [...cols, ...nodeColumns(["z"], ["gpu0"])];
    model.set({ node_columns: grown, nodes: [node("a", ["gpu0"], NOW), node("z", ["gpu0"], NOW)] });
    frames.flush();
    expect([...hostSelect().options].map((o) => o.value)).toContain("host:z");
    expect(plotOf("node:a:memory").data[1]).toEqual([GiB, GiB, 7 * GiB]);
  });

  test("this kernel's samples and the nodes' refresh do not redraw their panels; the ages move on", () => {
    let clock = NOW;
    widget = createWidget({ UPlot: StubUPlot, requestFrame: frames.requestFrame, cancelFrame: frames.cancelFrame, now: () => clock });
    const model = clusterModel(hostNames(9));
    show(model);
    choose("all");
    const calls = () => nodePlots().map((u) => u.setDataCalls);
    const before = calls();
    const age = () => el.querySelector(".nbgpumon-summary tbody tr").children[5].textContent;
    expect(age()).toBe("5 s ago");
    clock = NOW + 30;
    model.custom(...samples(2, [NOW - 1], [[GiB, 141 * GiB, 7, GiB]])); // a row of this kernel's
    frames.flush();
    expect(calls()).toEqual(before);
    expect(age()).toBe("35 s ago");
    model.set({ nodes: hostNames(9).map((h) => node(h, ["gpu0", "gpu1"], NOW + 20)) }); // every 2 s
    frames.flush();
    expect(calls()).toEqual(before);
    expect(age()).toBe("10 s ago");
    const [msg, buffers] = samples(2, [NOW + 10], [model.get("node_columns").map(() => 1)]);
    model.custom({ ...msg, type: "node_samples", version: 1 }, buffers); // an answer: drawn
    frames.flush();
    expect(calls()).toEqual(before.map((n) => n + 1));
  });

  test("cleanup removes the cluster view's listeners and plots", () => {
    const model = clusterModel(["a", "b"]);
    widget.initialize({ model });
    const before = model.listenerCount();
    const cleanup = widget.render({ model, el });
    frames.flush();
    choose("all");
    cleanup();
    expect(model.listenerCount()).toBe(before);
    expect(StubUPlot.instances.every((u) => u.destroyed)).toBe(true);
    expect(el.children.length).toBe(0);
  });
});
