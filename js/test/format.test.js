import { describe, expect, test } from "vitest";
import {
  formatBytes, formatBytesAxis, formatPercent, formatSeconds, formatSpan, ledgerLine, runningLine,
} from "../src/format.js";

describe("formatBytes", () => {
  test("binary units with one decimal below 100 and none above", () => {
    expect(formatBytes(2 ** 30)).toBe("1.0 GiB");
    expect(formatBytes(512 * 2 ** 20)).toBe("512 MiB");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(1000)).toBe("1000 B");
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(141 * 2 ** 30)).toBe("141 GiB");
  });

  test("deltas carry + and a real minus sign", () => {
    expect(formatBytes(2 ** 30, true)).toBe("+1.0 GiB");
    expect(formatBytes(-(2 ** 20), true)).toBe("\u22121.0 MiB");
    expect(formatBytes(-(2 ** 20))).toBe("\u22121.0 MiB");
    expect(formatBytes(0, true)).toBe("0 B");
  });

  test("missing values are a dash", () => {
    expect(formatBytes(null)).toBe("\u2014");
    expect(formatBytes(undefined)).toBe("\u2014");
    expect(formatBytes(NaN)).toBe("\u2014");
  });
});

test("formatSeconds switches units at 1 s, 60 s and 1 h", () => {
  expect(formatSeconds(0.25)).toBe("250 ms");
  expect(formatSeconds(12.34)).toBe("12.3 s");
  expect(formatSeconds(123)).toBe("2 min 3 s");
  expect(formatSeconds(3900)).toBe("1 h 5 min");
  expect(formatSeconds(null)).toBe("\u2014");
});

test("formatPercent rounds to whole percent", () => {
  expect(formatPercent(87.4)).toBe("87%");
  expect(formatPercent(null)).toBe("\u2014");
  expect(formatPercent(NaN)).toBe("\u2014");
});

test("axis labels drop the decimal for whole binary multiples", () => {
  expect(formatBytesAxis(32 * 2 ** 30)).toBe("32 GiB");
  expect(formatBytesAxis(0)).toBe("0");
  expect(formatBytesAxis(1.5 * 2 ** 30)).toBe("1.5 GiB");
});

test("the ledger line reads like the kernel's summary line", () => {
  const cell = {
    name: "[12]", status: "oom", alloc: 2 ** 30, peak: 3 * 2 ** 30, peak_exact: false,
    kept: 0, host_delta: -(2 ** 20), duration: 12.3, util_mean: 87,
  };
  expect(ledgerLine(cell)).toBe(
    "[12] +1.0 GiB alloc \u00b7 peak \u22653.0 GiB \u00b7 kept 0 B \u00b7 host \u22121.0 MiB \u00b7 12.3 s \u00b7 GPU 87% \u00b7 OOM",
  );
  expect(ledgerLine({ name: "[3]", status: "ok", alloc: null, duration: 0.5 })).toBe("[3] 500 ms");
});

test("the running cell's line says its time and what it changed so far", () => {
  const GiB = 2 ** 30;
  const running = { name: "[12]", duration: 35.24, allocated_so_far: GiB, host_delta: 12 * 2 ** 20 };
  expect(runningLine(running)).toBe("[12] running 35.2 s \u00b7 allocated +1.0 GiB so far \u00b7 host +12.0 MiB");
  expect(runningLine({ ...running, duration: 125 })).toContain("running 2 min 5 s");
  // without torch: the driver's view, when it moved
  const noTorch = { name: "[3]", duration: 2, allocated_so_far: null, gpu_used_so_far: -GiB, host_delta: null };
  expect(runningLine(noTorch)).toBe("[3] running 2.0 s \u00b7 GPU mem \u22121.0 GiB so far");
  expect(runningLine({ name: "[4]", duration: null })).toBe("[4] running \u2014");
});

test("formatSpan gives whole seconds under a minute", () => {
  expect(formatSpan(8.4)).toBe("8 s");
  expect(formatSpan(59.6)).toBe("1 min 0 s");
  expect(formatSpan(125)).toBe("2 min 5 s");
  expect(formatSpan(3900)).toBe("1 h 5 min");
  expect(formatSpan(-0.2)).toBe("0 s");
});
