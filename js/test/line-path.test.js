import { afterEach, beforeEach, expect, test } from "vitest";
import { linePath } from "../src/line-path.js";

class RecordingPath {
  constructor() {
    this.calls = [];
  }
  moveTo(x, y) {
    this.calls.push(["M", x, y]);
  }
  lineTo(x, y) {
    this.calls.push(["L", x, y]);
  }
}

let saved;
beforeEach(() => {
  saved = globalThis.Path2D;
  globalThis.Path2D = RecordingPath;
});
afterEach(() => {
  globalThis.Path2D = saved;
});

// What linePath reads of a uPlot instance: data, the series' scale, scales, bbox (canvas px).
function plot(xs, ys) {
  return {
    data: [xs, ys],
    series: [{}, { scale: "y" }],
    scales: { x: { min: 0, max: 10 }, y: { min: 0, max: 100 } },
    bbox: { left: 50, top: 10, width: 200, height: 100 },
  };
}

test("points map to canvas px, rounded, the value axis pointing up", () => {
  const { stroke, fill, clip } = linePath(plot([0, 5, 10], [0, 50, 100]), 1, 0, 2);
  expect(stroke.calls).toEqual([["M", 50, 110], ["L", 150, 60], ["L", 250, 10]]);
  expect(fill).toBeNull();
  expect(clip).toBeNull();
});

test("a null (a gap in the samples) breaks the line; a lone point between gaps draws no segment", () => {
  const u = plot([0, 1, 2, 3, 4, 5, 6], [10, 20, null, 30, null, 40, 50]);
  const { stroke } = linePath(u, 1, 0, 6);
  expect(stroke.calls.map((c) => c[0])).toEqual(["M", "L", "M", "M", "L"]);
  expect(stroke.calls[2]).toEqual(["M", 110, 80]); // the lone 30 at t = 3
});

test("only the indices uPlot asks for are drawn", () => {
  const { stroke } = linePath(plot([0, 1, 2, 3], [1, 2, 3, 4]), 1, 1, 2);
  expect(stroke.calls).toEqual([["M", 70, 108], ["L", 90, 107]]);
});
