import { describe, expect, test } from "vitest";
import { Ring, downsample, historySegment, ringSegment } from "../src/ring.js";

function rowsOf(n, width, t0 = 1000, dt = 1, f = (i, c) => i * 10 + c) {
  const times = new Float64Array(n);
  const values = new Float32Array(n * width);
  for (let i = 0; i < n; i++) {
    times[i] = t0 + i * dt;
    for (let c = 0; c < width; c++) values[i * width + c] = f(i, c);
  }
  return { times, values };
}

describe("Ring", () => {
  test("append keeps rows in order, columns row-major", () => {
    const ring = new Ring(2, 100);
    const { times, values } = rowsOf(5, 2);
    ring.append(times, values);
    expect(ring.length).toBe(5);
    expect(ring.time(0)).toBe(1000);
    expect(ring.lastTime).toBe(1004);
    expect(ring.value(3, 1)).toBe(31);
  });

  test("when full, the oldest rows are dropped and the newest kept (wrap-around)", () => {
    const ring = new Ring(1, 8);
    for (let k = 0; k < 5; k++) {
      const { times, values } = rowsOf(3, 1, 1000 + 3 * k, 1, (i) => 3 * k + i);
      ring.append(times, values);
    }
    expect(ring.length).toBe(8);
    expect(ring.dropped).toBe(7);
    expect(Array.from({ length: 8 }, (_, i) => ring.value(i, 0))).toEqual([7, 8, 9, 10, 11, 12, 13, 14]);
    expect(ring.firstTime).toBe(1007);
    expect(ring.head).not.toBe(0); // it really wrapped rather than shifting
  });

  test("storage grows on demand up to the capacity, default 200,000 rows", () => {
    const ring = new Ring(3);
    expect(ring.capacity).toBe(200_000);
    expect(ring.cap).toBeLessThan(200_000);
    const { times, values } = rowsOf(5000, 3);
    ring.append(times, values);
    expect(ring.length).toBe(5000);
    expect(ring.value(4999, 2)).toBe(49992);
  });

  test("a batch larger than the capacity keeps its last rows", () => {
    const ring = new Ring(1, 4);
    const { times, values } = rowsOf(10, 1);
    ring.append(times, values);
    expect(Array.from({ length: 4 }, (_, i) => ring.time(i))).toEqual([1006, 1007, 1008, 1009]);
  });

  test("window and slice select rows by time, inclusive, after wrapping", () => {
    const ring = new Ring(1, 50);
    const { times, values } = rowsOf(120, 1, 0, 0.5, (i) => i);
    ring.append(times, values); // holds t = 35.0 .. 59.5
    expect(ring.window(40, 42)).toEqual({ start: 10, end: 15 });
    const s = ring.slice(40, 42);
    expect(Array.from(s.times)).toEqual([40, 40.5, 41, 41.5, 42]);
    expect(Array.from(s.values)).toEqual([80, 81, 82, 83, 84]);
    expect(ring.slice(100, 200).times.length).toBe(0);
  });

  test("remap keeps columns by name and fills new ones with NaN", () => {
    const ring = new Ring(2, 10);
    const { times, values } = rowsOf(3, 2);
    ring.append(times, values);
    ring.appendBreak(1010);
    const next = ring.remap(["a", "b"], ["b", "c"]);
    expect(next.width).toBe(2);
    expect(next.value(1, 0)).toBe(11);
    expect(next.value(1, 1)).toBeNaN();
    expect(next.isBreak(3)).toBe(true);
  });
});

describe("downsample", () => {
  test("at most two points per pixel column, and every column's min and max survive", () => {
    const n = 100_000;
    const ring = new Ring(2, n);
    const { times, values } = rowsOf(n, 2, 0, 0.01, (i, c) => (c === 0 ? Math.sin(i / 50) : (i * 7919) % 1000));
    values[0 + 2 * 12_345] = 50; // a one-sample spike
    values[1 + 2 * 54_321] = -5; // a one-sample dip
    ring.append(times, values);
    const buckets = 400;
    const { x, ys } = downsample([ringSegment(ring)], [0, 1], 0, (n - 1) * 0.01, buckets, 2);
    expect(x.length).toBeLessThanOrEqual(2 * buckets);
    expect(Math.max(...ys[0])).toBe(50);
    expect(Math.min(...ys[1])).toBe(-5);
    expect(Math.max(...ys[1])).toBe(999);
    for (let i = 1; i < x.length; i++) expect(x[i]).toBeGreaterThanOrEqual(x[i - 1]);
  });

  test("sparse rows are kept as they are, plus one row either side of the window", () => {
    const ring = new Ring(1, 100);
    const { times, values } = rowsOf(10, 1, 0, 1, (i) => i);
    ring.append(times, values);
    const { x, ys } = downsample([ringSegment(ring)], [0], 3, 6, 1000);
    expect(x).toEqual([2, 3, 4, 5, 6, 7]);
    expect(ys[0]).toEqual([2, 3, 4, 5, 6, 7]);
  });

  test("a break row becomes a null point and NaN becomes null", () => {
    const ring = new Ring(1, 100);
    ring.append(new Float64Array([0, 1]), new Float32Array([1, NaN]));
    ring.appendBreak(1.5);
    ring.append(new Float64Array([2, 3]), new Float32Array([3, 4]));
    const { x, ys } = downsample([ringSegment(ring)], [0], 0, 3, 100);
    expect(x).toEqual([0, 1, 1.5, 2, 3]);
    expect(ys[0]).toEqual([1, null, null, 3, 4]);
  });

  test("history rows contribute their lows and highs when reduced, then live rows follow", () => {
    const history = {
      rows: 4, width: 1,
      times: new Float64Array([0, 1, 2, 3]),
      mean: new Float32Array([5, 5, 5, 5]),
      low: new Float32Array([4, 1, 4, 4]),
      high: new Float32Array([6, 6, 9, 6]),
    };
    const ring = new Ring(1, 10);
    ring.append(new Float64Array([10, 11]), new Float32Array([7, 8]));
    const { x, ys } = downsample([historySegment(history), ringSegment(ring)], [0], 0, 11, 1);
    // one bucket of six rows -> two points: min 1 (history low) before max 9 (history high)
    expect(x).toEqual([0, 11]);
    expect(ys[0]).toEqual([1, 9]);
  });
});
