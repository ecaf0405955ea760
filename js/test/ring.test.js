import { describe, expect, test } from "vitest";
import { Ring } from "../src/ring.js";

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
  test("append takes row-major values and keeps rows in order", () => {
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

  test("window selects rows by time, inclusive, after wrapping", () => {
    const ring = new Ring(1, 50);
    const { times, values } = rowsOf(120, 1, 0, 0.5, (i) => i);
    ring.append(times, values); // holds t = 35.0 .. 59.5
    const { start, end } = ring.window(40, 42);
    expect([start, end]).toEqual([10, 15]);
    expect(Array.from({ length: end - start }, (_, k) => ring.value(start + k, 0))).toEqual([80, 81, 82, 83, 84]);
    expect(ring.window(100, 200)).toEqual({ start: 50, end: 50 });
    expect(ring.total).toBe(120);
  });

  test("growing keeps every column of every row", () => {
    const ring = new Ring(3, 10_000);
    for (let k = 0; k < 30; k++) {
      const { times, values } = rowsOf(100, 3, k * 100, 1, (i, c) => (k * 100 + i) * 10 + c);
      ring.append(times, values);
    }
    expect(ring.cap).toBeGreaterThanOrEqual(3000);
    for (const i of [0, 1023, 1024, 2047, 2999]) {
      expect([0, 1, 2].map((c) => ring.value(i, c))).toEqual([i * 10, i * 10 + 1, i * 10 + 2]);
    }
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
