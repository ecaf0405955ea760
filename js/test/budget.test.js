import { describe, expect, test } from "vitest";
import { MAX_BUCKET_PX, POINT_BUDGET, bucketColumns } from "../src/budget.js";
import { Downsampler, bucketSeconds } from "../src/downsample.js";
import { Store } from "../src/store.js";

const WIDTH = 1000; // CSS px, a panel's width in the benchmarks

describe("the points budget of a frame", () => {
  test("a few lines on screen are drawn at two points a pixel column, as without a budget", () => {
    for (const lines of [0, 1, 5, 10]) expect(bucketColumns(WIDTH, lines)).toBe(WIDTH);
  });

  test("the lines on screen share the budget: N panels of four lines, at most POINT_BUDGET points", () => {
    for (const panels of [4, 5, 6, 8]) {
      const lines = 4 * panels;
      const columns = bucketColumns(WIDTH, lines);
      expect(columns).toBeLessThan(WIDTH);
      expect(columns).toBe(Math.floor(POINT_BUDGET / (2 * lines))); // every line the same share
      expect(2 * columns * lines).toBeLessThanOrEqual(POINT_BUDGET);
    }
    // the more panels on screen, the fewer points each
    const share = [4, 5, 6, 8].map((panels) => bucketColumns(WIDTH, 4 * panels));
    expect(share).toEqual([...share].sort((a, b) => b - a));
  });

  test("however many lines share it, no bucket is wider than MAX_BUCKET_PX", () => {
    for (const lines of [64, 200, 10_000]) {
      const columns = bucketColumns(WIDTH, lines);
      expect(columns).toBe(Math.ceil((2 * WIDTH) / MAX_BUCKET_PX));
      // the downsampler's power-of-two buckets, for any span in view
      for (const span of [60, 600, 3600, 10_007, 86_400]) {
        const px = (bucketSeconds(span, columns) / span) * WIDTH;
        expect(px).toBeLessThanOrEqual(MAX_BUCKET_PX);
      }
    }
  });

  test("a narrow panel, or none laid out yet, still gets at least one column", () => {
    expect(bucketColumns(0, 64)).toBe(1);
    expect(bucketColumns(3, 0)).toBe(3);
  });

  test("at the coarsest share a one-sample spike and dip still reach their value", () => {
    // 100k rows at 10 Hz (the benchmark's), a spike and a dip of one sample each
    const n = 100_000;
    const store = new Store();
    store.setColumns(["a"]);
    const times = new Float64Array(n);
    const values = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      times[i] = i / 10;
      values[i] = i === 31_337 ? 500 : i === 77_777 ? -40 : 10 + Math.sin(i / 500);
    }
    store.appendSamples({ start: 0, rows: n, width: 1, gap: false, times, values });
    const columns = bucketColumns(WIDTH, 10_000);
    const { x, ys } = new Downsampler().run(store, [0], 0, columns);
    expect(x.length).toBeLessThanOrEqual(2 * columns + 2);
    expect(Math.max(...ys[0])).toBe(500);
    expect(Math.min(...ys[0])).toBe(-40);
    // drawn where it happened, within one bucket
    const at = x[ys[0].indexOf(500)];
    expect(Math.abs(at - 3133.7)).toBeLessThanOrEqual(bucketSeconds(x.at(-1) - x[0], columns));
  });
});
