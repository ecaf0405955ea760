import { describe, expect, test } from "vitest";
import { decodeSamples } from "../src/messages.js";
import { Store, connectModel, storeFor } from "../src/store.js";
import { FakeModel } from "./fake-model.js";
import { packHistory, samples } from "./protocol.js";

const COLUMNS = ["gpu0.mem_used", "host.rss"];

function send(model, start, times, rows, opts) {
  model.custom(...samples(start, times, rows, opts));
}

function heldTimes(store) {
  return Array.from({ length: store.ring.length }, (_, i) => store.ring.time(i));
}

describe("the model's store", () => {
  test("history and samples fill one timeline; the revision counts changes", () => {
    const model = new FakeModel({
      columns: COLUMNS,
      history: new DataView(packHistory([1, 2], [[10, 1], [20, 2]]).buffer),
    });
    connectModel(model);
    const store = storeFor(model);
    expect(store.size).toBe(2);
    const seen = [];
    store.subscribe((rev) => seen.push(rev));
    send(model, 0, [3, 4], [[30, 3], [40, 4]]);
    expect(store.size).toBe(4);
    expect(seen).toEqual([store.revision]);
    expect(store.latest("gpu0.mem_used")).toBe(40);
    expect(store.segments().length).toBe(2);
  });

  test("rows that overlap the history or a resend are not held twice", () => {
    const model = new FakeModel({ columns: COLUMNS, history: packHistory([1, 2], [[1, 1], [2, 2]]) });
    connectModel(model);
    const store = storeFor(model);
    send(model, 0, [2, 3], [[2, 2], [3, 3]]); // t=2 is already in the history
    send(model, 1, [3, 4], [[3, 3], [4, 4]]); // cursor 2: row at t=3 again
    expect(heldTimes(store)).toEqual([3, 4]);
    expect(store.stats.gaps).toBe(0);
  });

  test("a start past the cursor breaks the line between the old and the new rows", () => {
    const model = new FakeModel({ columns: COLUMNS });
    connectModel(model);
    const store = storeFor(model);
    send(model, 0, [1, 2], [[1, 1], [2, 2]]);
    send(model, 5, [6, 7], [[6, 6], [7, 7]]); // rows 2..4 never arrived
    expect(heldTimes(store)).toEqual([1, 2, 4, 6, 7]);
    expect(store.ring.isBreak(2)).toBe(true);
    expect(store.stats.gaps).toBe(1);
    expect(store.cursor).toBe(7);
  });

  test("the kernel's gap flag breaks the line too", () => {
    const model = new FakeModel({ columns: COLUMNS });
    connectModel(model);
    const store = storeFor(model);
    send(model, 0, [1], [[1, 1]]);
    send(model, 1, [9], [[9, 9]], { gap: true });
    expect(heldTimes(store)).toEqual([1, 5, 9]);
    expect(store.ring.isBreak(1)).toBe(true);
  });

  test("a message whose width is not the column count is rejected", () => {
    const model = new FakeModel({ columns: COLUMNS });
    connectModel(model);
    const store = storeFor(model);
    send(model, 0, [1], [[1, 2, 3]]);
    expect(store.size).toBe(0);
    expect(store.stats.rejected).toBe(1);
  });

  test("new columns keep the rows held, matched by name", () => {
    const model = new FakeModel({ columns: COLUMNS });
    connectModel(model);
    const store = storeFor(model);
    send(model, 0, [1], [[100, 7]]);
    model.set({ columns: ["host.rss", "gpu0.allocated", "gpu0.mem_used"] });
    expect(store.ring.width).toBe(3);
    expect(store.ring.value(0, 0)).toBe(7);
    expect(store.ring.value(0, 1)).toBeNaN();
    expect(store.ring.value(0, 2)).toBe(100);
    send(model, 1, [2], [[8, 1, 101]]);
    expect(store.size).toBe(2);
  });

  test("a history snapshot that arrives with its columns is used whichever event comes first", () => {
    const model = new FakeModel({ columns: ["a"] });
    connectModel(model);
    const store = storeFor(model);
    // history fires before columns here
    model.state.history = packHistory([1], [[1, 2]]);
    model.state.columns = ["a", "b"];
    model.emit("change:history");
    model.emit("change:columns");
    expect(store.history.width).toBe(2);
    expect(store.size).toBe(1);
  });

  test("the ring holds at most its capacity", () => {
    const store = new Store({ capacity: 3 });
    store.setColumns(["x"]);
    store.appendSamples(decodeSamples(...samples(0, [1, 2, 3, 4, 5], [[1], [2], [3], [4], [5]])));
    expect(store.size).toBe(3);
    expect(store.firstTime).toBe(3);
  });

  test("connecting adds three listeners and its cleanup removes them", () => {
    const model = new FakeModel({ columns: COLUMNS });
    const cleanup = connectModel(model);
    expect(model.listenerCount()).toBe(3);
    expect(model.listenerCount("msg:custom")).toBe(1);
    cleanup();
    expect(model.listenerCount()).toBe(0);
  });

  test("connecting twice replaces the first connection (no double rows)", () => {
    const model = new FakeModel({ columns: COLUMNS });
    connectModel(model);
    connectModel(model);
    expect(model.listenerCount("msg:custom")).toBe(1);
    send(model, 0, [1], [[1, 1]]);
    expect(storeFor(model).size).toBe(1);
  });
});
