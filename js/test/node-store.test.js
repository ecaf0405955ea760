import { describe, expect, test } from "vitest";
import { NODE_CAPACITY, NodeStore, connectNodes, nodeStoreFor } from "../src/node-store.js";
import { storeFor } from "../src/store.js";
import { FakeModel } from "./fake-model.js";
import { nodeColumns } from "./node-columns.js";
import { packHistory, samples } from "./protocol.js";

const GiB = 2 ** 30;

/** A `node_samples` message: a `samples` one with the other type and a version. */
function nodeSamples(start, times, rows, version = 1, options = {}) {
  const [msg, buffers] = samples(start, times, rows, options);
  return [{ ...msg, type: "node_samples", version }, buffers];
}

function nodeModel(columns, extra = {}) {
  return new FakeModel({ node_columns: columns, node_history: new DataView(new ArrayBuffer(0)), nodes: [], ...extra });
}

describe("the node store", () => {
  test("takes node_samples rows by column, and leaves the timeline's store alone", () => {
    const cols = nodeColumns(["node-1"], ["gpu0"]); // gpu_util, mem_total, mem_used
    const model = nodeModel(cols);
    connectNodes(model);
    model.custom(...nodeSamples(0, [100, 115], [[50, 80 * GiB, 10 * GiB], [60, 80 * GiB, 12 * GiB]]));
    const store = nodeStoreFor(model);
    expect(store.size).toBe(2);
    expect(store.latest("node:node-1.gpu0.mem_used")).toBe(12 * GiB);
    expect(store.latest("node:node-1.gpu0.gpu_util")).toBe(60);
    expect(store.version).toBe(1);
    expect(storeFor(model).size).toBe(0); // the local timeline got nothing
    // a timeline `samples` message is not the cluster's
    model.custom(...samples(2, [130], [[1, 2, 3]]));
    expect(store.size).toBe(2);
  });

  test("the ring keeps a fixed number of rows, the newest", () => {
    const store = new NodeStore({ capacity: 100 });
    store.setColumns(nodeColumns(["n"], ["gpu0"], ["mem_used"]));
    for (let i = 0; i < 250; i++) {
      const times = new Float64Array([1000 + i]);
      store.appendSamples({ start: i, rows: 1, width: 1, gap: false, version: 1, times, values: new Float32Array([i]) });
    }
    expect(store.ring.length).toBe(100);
    expect(store.firstTime).toBe(1150);
    expect(store.latest("node:n.gpu0.mem_used")).toBe(249);
    expect(new NodeStore().capacity).toBe(NODE_CAPACITY);
  });

  test("a message as wide as other columns is rejected; new columns keep the rows held", () => {
    const one = nodeColumns(["a"], ["gpu0"], ["mem_used"]);
    const model = nodeModel(one);
    connectNodes(model);
    const store = nodeStoreFor(model);
    model.custom(...nodeSamples(0, [100], [[1 * GiB]], 1));
    model.custom(...nodeSamples(1, [115], [[2 * GiB, 3 * GiB]], 2)); // columns not here yet
    expect(store.size).toBe(1);
    expect(store.stats.rejected).toBe(1);

    // host b answered: its column joins (version 2), with the history of both, in one update
    const two = [...one, ...nodeColumns(["b"], ["gpu0"], ["mem_used"])];
    model.set({ node_columns: two, node_history: packHistory([100], [[1 * GiB, NaN]]) });
    model.custom(...nodeSamples(1, [115], [[2 * GiB, 3 * GiB]], 2));
    expect(store.columns).toEqual(["node:a.gpu0.mem_used", "node:b.gpu0.mem_used"]);
    expect(store.size).toBe(2);
    expect(store.latest("node:a.gpu0.mem_used")).toBe(2 * GiB);
    expect(store.latest("node:b.gpu0.mem_used")).toBe(3 * GiB);
    expect(store.version).toBe(2);
    expect(store.ring.value(0, 1)).toBeNaN(); // b was missing before it answered

    // a late message of the older columns' version is not taken
    model.custom(...nodeSamples(2, [130], [[4 * GiB, 5 * GiB]], 1));
    expect(store.latest("node:a.gpu0.mem_used")).toBe(2 * GiB);
    model.custom(...nodeSamples(2, [130], [[4 * GiB, 5 * GiB]], 2));
    expect(store.latest("node:a.gpu0.mem_used")).toBe(4 * GiB);
  });

  test("a history snapshot starts a view that opens late; rows it already has are not doubled", () => {
    const cols = nodeColumns(["a"], ["gpu0"], ["mem_used"]);
    const model = nodeModel(cols, { node_history: packHistory([100, 115], [[1], [2]]), _uid: "late-view" });
    connectNodes(model);
    const store = nodeStoreFor(model);
    expect(store.size).toBe(2);
    model.custom(...nodeSamples(1, [115, 130], [[2], [3]]));
    expect(store.size).toBe(3);
    expect(store.latest("node:a.gpu0.mem_used")).toBe(3);
  });

  test("disconnecting removes every listener it added", () => {
    const model = nodeModel(nodeColumns(["a"], ["gpu0"]));
    const off = connectNodes(model);
    expect(model.listenerCount()).toBe(3);
    off();
    expect(model.listenerCount()).toBe(0);
  });
});
