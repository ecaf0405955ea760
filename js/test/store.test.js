import { describe, expect, test, vi } from "vitest";
import { decodeSamples } from "../src/messages.js";
import { QUIET_MS, Store, connectModel, droppedByFrontEnd, storeFor } from "../src/store.js";
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

describe("rows a front end dropped are asked for again and merged in", () => {
  function gapped() {
    const model = new FakeModel({ columns: COLUMNS });
    connectModel(model);
    const store = storeFor(model);
    send(model, 0, [1, 2], [[1, 1], [2, 2]], { afterCell: true }); // only the main thread's come
    // rows 2..4 (t = 3, 4, 5) never arrived: the main thread's message after a cell shows it
    send(model, 5, [6, 7], [[6, 6], [7, 7]], { afterCell: true });
    return { model, store };
  }

  test("a start past the cursor sends one resend request for exactly the missing rows", () => {
    const { model, store } = gapped();
    expect(model.sent).toEqual([{ type: "resend", from: 2, to: 5 }]);
    expect(store.stats.asked).toBe(1);
    expect(store.stats.dropped).toBe(1);
  });

  test("the kernel's gap flag asks for nothing: it no longer has those rows", () => {
    const model = new FakeModel({ columns: COLUMNS });
    connectModel(model);
    send(model, 0, [1, 2], [[1, 1], [2, 2]]);
    send(model, 5, [6, 7], [[6, 6], [7, 7]], { gap: true });
    expect(model.sent).toEqual([]);
  });

  test("the fill lands between the rows held, in time order, and the break goes", () => {
    const { model, store } = gapped();
    const epoch = store.epoch;
    send(model, 2, [3, 4, 5], [[3, 3], [4, 4], [5, 5]], { fill: true });
    expect(heldTimes(store)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(Array.from({ length: 7 }, (_, i) => store.ring.isBreak(i))).toEqual(Array(7).fill(false));
    expect(store.latest("host.rss")).toBe(7); // still the newest row's value
    expect(store.ring.value(3, 0)).toBe(4);
    expect(store.cursor).toBe(7);
    expect(store.stats.filled).toBe(3);
    expect(store.epoch).toBe(epoch + 1); // drawing caches start again
  });

  test("a fill the kernel could give only in part breaks the line just before its rows", () => {
    const { model, store } = gapped();
    send(model, 3, [4, 5], [[4, 4], [5, 5]], { fill: true, gap: true }); // row 2 (t = 3) is gone
    expect(heldTimes(store)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(Array.from({ length: 7 }, (_, i) => store.ring.isBreak(i))).toEqual([
      false, false, true, false, false, false, false,
    ]);
  });

  test("rows sent again that are held already are not held twice, and no break goes", () => {
    const { model, store } = gapped();
    send(model, 0, [1, 2, 3], [[1, 1], [2, 2], [3, 3]], { fill: true }); // not what was asked
    expect(heldTimes(store)).toEqual([1, 2, 3, 4, 6, 7]);
    expect(store.ring.isBreak(3)).toBe(true); // t = 4, 5 are still missing
    expect(store.stats.filled).toBe(0); // it answers no request: not the rows asked for
    expect(store.stats.caughtUp).toBe(1);
  });

  test("a fill of other columns is ignored", () => {
    const { model, store } = gapped();
    send(model, 2, [3], [[3, 3, 3]], { fill: true });
    expect(heldTimes(store)).toEqual([1, 2, 4, 6, 7]);
  });
});

test("before any samples message, the history's cursor says which rows are missing", () => {
  const model = new FakeModel({
    columns: COLUMNS,
    history: new DataView(packHistory([1, 2], [[1, 1], [2, 2]]).buffer),
    history_cursor: 2,
  });
  connectModel(model);
  send(model, 9, [10], [[10, 10]]); // the sampler's messages for cursors 2..8 never arrived
  expect(model.sent).toEqual([{ type: "resend", from: 2, to: 9 }]);
  send(model, 2, [3, 4, 5, 6, 7, 8, 9], [3, 4, 5, 6, 7, 8, 9].map((t) => [t, t]), { fill: true });
  expect(heldTimes(storeFor(model))).toEqual([3, 4, 5, 6, 7, 8, 9, 10]);
  expect(storeFor(model).size).toBe(10); // the two history rows, then the eight live ones
});

describe("which holes a front end dropped, and which a page missed by connecting late", () => {
  const cases = [
    ["after a cell, on a page that never got a message of the sampler's thread: dropped", 0, true, true],
    ["after a cell, on a page that got the sampler thread's messages: missed", 3, true, false],
    ["the sampler thread's message (a page that connected late, a reconnect): missed", 3, false, false],
    ["the sampler thread's message, the first one a page got: missed", 0, false, false],
  ];
  for (const [name, fromThread, afterCell, dropped] of cases) {
    test(name, () => {
      expect(droppedByFrontEnd({ stats: { fromThread } }, { afterCell })).toBe(dropped);
    });
  }

  test("a page that connected late asks for what it missed and counts it as caught up", () => {
    const model = new FakeModel({
      columns: COLUMNS,
      history: new DataView(packHistory([1, 2], [[1, 1], [2, 2]]).buffer),
      history_cursor: 2, // packed when the notebook ran; the page opened later
    });
    connectModel(model);
    const store = storeFor(model);
    send(model, 9, [10, 11], [[10, 10], [11, 11]]); // the sampler's, live
    expect(model.sent).toEqual([{ type: "resend", from: 2, to: 9 }]);
    expect(store.stats).toMatchObject({ asked: 1, dropped: 0 });
    const times = [3, 4, 5, 6, 7, 8, 9];
    send(model, 2, times, times.map((t) => [t, t]), { fill: true });
    expect(heldTimes(store)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(Array.from(store.times())).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]); // no break
    expect(store.stats).toMatchObject({ filled: 0, caughtUp: 7 });
    send(model, 11, [12], [[12, 12]]);
    expect(model.sent.length).toBe(1); // and nothing more to ask for
  });

  test("a hole the main thread shows after a cell, on a page that got only those, is dropped", () => {
    const model = new FakeModel({ columns: COLUMNS, history_cursor: 0 });
    connectModel(model);
    const store = storeFor(model);
    send(model, 0, [1], [[1, 1]], { afterCell: true }); // after the cell that showed the chart
    send(model, 30, [31], [[31, 31]], { afterCell: true }); // after the next: 1..29 never came
    expect(model.sent).toEqual([{ type: "resend", from: 1, to: 30 }]);
    expect(store.stats).toMatchObject({ asked: 1, dropped: 1 });
    const times = Array.from({ length: 29 }, (_, k) => 2 + k);
    send(model, 1, times, times.map((t) => [t, t]), { fill: true });
    expect(store.stats).toMatchObject({ filled: 29, caughtUp: 0 });
    expect(Array.from(store.times()).some(Number.isNaN)).toBe(false);
  });

  test("the first message a page gets, after a cell, with rows missing before it: dropped", () => {
    // Colab: the sampler's messages never come, and the one after the cell that showed the
    // chart came before the model was there to take it
    const model = new FakeModel({ columns: COLUMNS, history_cursor: 3 });
    connectModel(model);
    send(model, 38, [38], [[38, 38]], { afterCell: true });
    expect(model.sent).toEqual([{ type: "resend", from: 3, to: 38 }]);
    expect(storeFor(model).stats).toMatchObject({ asked: 1, dropped: 1 });
  });

  test("a hole after a cell on a page that got the sampler thread's rows is no dropped one", () => {
    const model = new FakeModel({ columns: COLUMNS, history_cursor: 0 });
    connectModel(model);
    send(model, 0, [1, 2], [[1, 1], [2, 2]]); // the sampler's: this front end delivers them
    send(model, 9, [10], [[10, 10]], { afterCell: true }); // 2..8 lost to a reconnect
    expect(model.sent).toEqual([{ type: "resend", from: 2, to: 9 }]);
    expect(storeFor(model).stats).toMatchObject({ asked: 1, dropped: 0 });
  });

  test("the times a view draws mark a break as NaN", () => {
    const model = new FakeModel({ columns: COLUMNS });
    connectModel(model);
    send(model, 0, [1, 2], [[1, 1], [2, 2]]);
    send(model, 5, [6], [[6, 6]], { gap: true });
    expect(Array.from(storeFor(model).times())).toEqual([1, 2, NaN, 6]);
  });

  test("the values a view draws follow its times: the history's, then the live rows'", () => {
    const model = new FakeModel({
      columns: COLUMNS,
      history: new DataView(packHistory([1, 2], [[10, 100], [20, 200]]).buffer),
      history_cursor: 2,
    });
    connectModel(model);
    send(model, 2, [3], [[30, 300]]);
    send(model, 5, [6], [[60, 600]], { gap: true });
    const store = storeFor(model);
    expect(Array.from(store.values("host.rss"))).toEqual([100, 200, 300, NaN, 600]);
    expect(Array.from(store.values("gpu0.mem_used"))).toEqual([10, 20, 30, NaN, 60]);
    expect(Array.from(store.values("no.such"))).toEqual([NaN, NaN, NaN, NaN, NaN]);
  });
});

describe("a front end that drops what the kernel's other threads send", () => {
  test("a page that hears none of the sampler's messages asks for the main thread's, once", () => {
    vi.useFakeTimers();
    try {
      const model = new FakeModel({ columns: COLUMNS, interval: 0.1 });
      connectModel(model);
      send(model, 0, [1], [[1, 1]], { afterCell: true }); // the main thread's, not the sampler's
      vi.advanceTimersByTime(QUIET_MS - 1);
      expect(model.sent).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(model.sent).toEqual([{ type: "main_thread" }]);
      vi.advanceTimersByTime(10 * QUIET_MS);
      expect(model.sent).toEqual([{ type: "main_thread" }]);
    } finally {
      vi.useRealTimers();
    }
  });

  test("a page that hears the sampler's thread, or waits longer at a slow interval, never asks", () => {
    vi.useFakeTimers();
    try {
      const heard = new FakeModel({ columns: COLUMNS, interval: 0.1 });
      connectModel(heard);
      send(heard, 0, [1], [[1, 1]]);
      vi.advanceTimersByTime(10 * QUIET_MS);
      expect(heard.sent).toEqual([]);
      const slow = new FakeModel({ columns: COLUMNS, interval: 2 });
      const cleanup = connectModel(slow);
      vi.advanceTimersByTime(4000 * 2 - 1);
      expect(slow.sent).toEqual([]);
      cleanup(); // a page that goes before the wait is over asks nothing
      vi.advanceTimersByTime(10 * QUIET_MS);
      expect(slow.sent).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });
});
