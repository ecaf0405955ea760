import { describe, expect, test } from "vitest";
import { Downsampler, bucketSeconds } from "../src/downsample.js";
import { Ring } from "../src/ring.js";
import { Store } from "../src/store.js";

/** A store holding `n` rows of `width` columns, row i at t0 + i*dt with values f(i, c). */
function storeOf(n, width, { t0 = 1000, dt = 1, f = (i, c) => i * 10 + c, capacity } = {}) {
  const store = new Store(capacity ? { capacity } : {});
  store.setColumns(Array.from({ length: width }, (_, c) => `c${c}`));
  appendRows(store, n, width, { t0, dt, f, start: 0 });
  return store;
}

function appendRows(store, n, width, { t0, dt, f, start }) {
  const times = new Float64Array(n);
  const values = new Float32Array(n * width);
  for (let i = 0; i < n; i++) {
    times[i] = t0 + (start + i) * dt;
    for (let c = 0; c < width; c++) values[i * width + c] = f(start + i, c);
  }
  store.appendSamples({ start: store.cursor ?? 0, rows: n, width, gap: false, times, values });
}

describe("bucketSeconds", () => {
  test("a power of two at least span/pixels, so buckets in view are between pixels/2 and pixels", () => {
    for (const [span, px] of [[600, 1000], [3600, 800], [1e4, 1000], [0.5, 640]]) {
      const dt = bucketSeconds(span, px);
      expect(Number.isInteger(Math.log2(dt))).toBe(true);
      expect(span / dt).toBeLessThanOrEqual(px);
      expect(span / dt).toBeGreaterThan(px / 2);
    }
  });
});

describe("Downsampler", () => {
  test("at most two points per pixel column, and every column's min and max survive", () => {
    const n = 100_000;
    const f = (i, c) => (i === 12_345 && c === 0 ? 50 : i === 54_321 && c === 1 ? -5 : c === 0 ? Math.sin(i / 50) : (i * 7919) % 1000);
    const store = storeOf(n, 2, { t0: 0, dt: 0.01, f });
    const pixels = 400;
    const { x, ys } = new Downsampler().run(store, [0, 1], 0, pixels);
    expect(x.length).toBeLessThanOrEqual(2 * (pixels + 1));
    expect(x.length).toBeGreaterThan(pixels); // not reduced further than needed
    expect(Math.max(...ys[0])).toBe(50);
    expect(Math.min(...ys[1])).toBe(-5);
    expect(Math.max(...ys[1])).toBe(999);
    for (let i = 1; i < x.length; i++) expect(x[i]).toBeGreaterThanOrEqual(x[i - 1]);
  });

  test("sparse rows are kept as they are, from the row before the window to the newest", () => {
    const store = storeOf(10, 1, { t0: 0, f: (i) => i });
    const { x, ys } = new Downsampler().run(store, [0], 3, 1000);
    expect(x).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    expect(ys[0]).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
  });

  test("a break row becomes a null point and NaN becomes null", () => {
    const store = new Store();
    store.setColumns(["a"]);
    store.ring.append(new Float64Array([0, 1]), new Float32Array([1, NaN]));
    store.ring.appendBreak(1.5);
    store.ring.append(new Float64Array([2, 3]), new Float32Array([3, 4]));
    const { x, ys } = new Downsampler().run(store, [0], 0, 100);
    expect(x).toEqual([0, 1, 1.5, 2, 3]);
    expect(ys[0]).toEqual([1, null, null, 3, 4]);
  });

  test("history rows contribute their lows and highs when reduced, then live rows follow", () => {
    const store = new Store();
    store.setColumns(["a"]);
    store.setHistory({
      rows: 4,
      width: 1,
      times: new Float64Array([0, 1, 2, 3]),
      mean: [new Float32Array([5, 5, 5, 5])],
      low: [new Float32Array([4, 1, 4, 4])],
      high: [new Float32Array([6, 6, 9, 6])],
    });
    store.ring.append(new Float64Array([10, 11]), new Float32Array([7, 8]));
    // one pixel: a 16 s bucket holds all six rows -> min 1 (a history low) before max 9
    const { x, ys } = new Downsampler().run(store, [0], 0, 1);
    expect(x).toEqual([0, 11]);
    expect(ys[0]).toEqual([1, 9]);
  });

  test("drawing as rows arrive gives the same points as a fresh pass, window sliding", () => {
    const width = 3;
    const f = (i, c) => Math.sin(i / 13 + c) * 100 + ((i * 31) % 17);
    const store = storeOf(5000, width, { t0: 0, dt: 0.1, f });
    const live = new Downsampler();
    let rows = 5000;
    for (let step = 0; step < 200; step++) {
      if (step % 37 === 5) store.pendingGap = true; // a lost message: a break row
      const n = 1 + (step % 4);
      appendRows(store, n, width, { t0: 0, dt: 0.1, f, start: rows });
      rows += n;
      const t0 = store.lastTime - 60; // the "1 min" window
      const got = live.run(store, [0, 2], t0, 300);
      const want = new Downsampler().run(store, [0, 2], t0, 300);
      expect(got).toEqual(want);
      // after the first pass only the open bucket and the new rows are walked again
      if (step > 0) expect(live.rowsReduced).toBeLessThan(20);
    }
    expect(store.stats.gaps).toBeGreaterThan(0);
  });

  test("switching between bucket widths (panels scrolling in and out) resumes each one's pass", () => {
    const width = 2;
    const f = (i, c) => Math.cos(i / 7 + c) * 50;
    const store = storeOf(20_500, width, { t0: 0, dt: 0.1, f }); // 2,050 s: 16 s or 4 s buckets
    const live = new Downsampler();
    let rows = 20_500;
    for (let step = 0; step < 40; step++) {
      appendRows(store, 1, width, { t0: 0, dt: 0.1, f, start: rows });
      rows += 1;
      const pixels = step % 2 ? 1000 : 250; // the budget's share as the panels on screen change
      const got = live.run(store, [0, 1], store.firstTime, pixels);
      expect(got).toEqual(new Downsampler().run(store, [0, 1], store.firstTime, pixels));
      if (step > 1) expect(live.rowsReduced).toBeLessThan(200); // not all 20,500 rows again
    }
  });

  test("after the columns change the next pass starts over", () => {
    const store = storeOf(1000, 2, { t0: 0 });
    const live = new Downsampler();
    live.run(store, [0, 1], 0, 100);
    store.setColumns(["c1", "c0"]);
    expect(live.run(store, [0], 0, 100)).toEqual(new Downsampler().run(store, [0], 0, 100));
    expect(live.run(store, [0], 0, 100).ys[0][0]).toBe(1); // column c1 of row 0
  });

  test("with the ring full and wrapping, points stay in time order and end at the newest row", () => {
    const store = storeOf(500, 1, { t0: 0, f: (i) => i, capacity: 256 });
    const live = new Downsampler();
    for (let k = 0; k < 50; k++) {
      appendRows(store, 7, 1, { t0: 0, dt: 1, f: (i) => i, start: 500 + 7 * k });
      const { x, ys } = live.run(store, [0], store.firstTime, 64);
      for (let i = 1; i < x.length; i++) expect(x[i]).toBeGreaterThanOrEqual(x[i - 1]);
      expect(x[x.length - 1]).toBe(store.lastTime);
      expect(ys[0][ys[0].length - 1]).toBe(store.lastTime);
    }
    expect(store.ring.dropped).toBeGreaterThan(0);
  });
});
