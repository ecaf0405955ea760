import { describe, expect, test } from "vitest";
import { SUBSECOND_SPAN, TIME_INCRS, incrsFor, timeAxis, timeLabels } from "../src/time-axis.js";

const UTC = { locale: "en-GB", timeZone: "UTC" };
const T = Date.UTC(2026, 11, 1, 12, 3, 5) / 1000; // 12:03:05 UTC

describe("time axis labels", () => {
  test("ticks a second or more apart read as clock time, without fractions", () => {
    const { label } = timeLabels(UTC);
    expect(label(T, 1)).toBe("12:03:05");
    expect(label(T + 30, 5)).toBe("12:03:35");
    expect(label(T - 5, 60)).toBe("12:03");
    expect(label(T - 5 + 1800, 900)).toBe("12:33");
  });

  test("tenths of a second only when ticks are under a second apart", () => {
    const { label } = timeLabels(UTC);
    expect(label(T + 0.5, 0.5)).toBe("12:03:05.5");
    expect(label(T + 0.30000000000001, 0.1)).toBe("12:03:05.3");
    expect(label(T + 0.29999999999, 0.1)).toBe("12:03:05.3"); // float noise in the splits
    expect(timeLabels({ locale: "de-DE", timeZone: "UTC" }).label(T + 0.5, 0.5)).toBe("12:03:05,5");
  });

  test("a 12-hour locale keeps its AM/PM, and gets room for it", () => {
    const us = timeLabels({ locale: "en-US", timeZone: "UTC" });
    expect(us.label(T, 1)).toBe("12:03:05 PM");
    expect(us.label(T - 5, 60)).toBe("12:03 PM");
    expect(us.space).toBeGreaterThan(timeLabels(UTC).space);
  });

  test("a label made once reads the same when asked again, and a finer step still gets its own", () => {
    const { label } = timeLabels(UTC);
    for (let k = 0; k < 3; k++) expect(label(T, 1)).toBe("12:03:05"); // the same tick, every panel
    expect(label(T, 0.5)).toBe("12:03:05.0");
    expect(label(T, 60)).toBe("12:03");
    for (let k = 0; k < 5000; k++) label(T + k, 1); // more than are remembered: still right
    expect(label(T + 30, 5)).toBe("12:03:35");
  });

  test("hour ticks show the date at midnight, day ticks always", () => {
    const { label } = timeLabels(UTC);
    const midnight = Date.UTC(2026, 11, 2) / 1000;
    expect(label(midnight, 6 * 3600)).toBe("2 Dec");
    expect(label(midnight + 6 * 3600, 6 * 3600)).toBe("06:00");
    expect(label(midnight, 86400)).toBe("2 Dec");
    expect(label(midnight, 60)).toBe("00:00"); // minute ticks: the time, even at midnight
  });
});

test("the tick steps are ones a person counts in, from a tenth of a second to weeks", () => {
  expect(TIME_INCRS.slice(3, 15)).toEqual([1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800]);
  expect(TIME_INCRS).toEqual([...TIME_INCRS].sort((a, b) => a - b));
  expect(TIME_INCRS.filter((s) => s < 1)).toEqual([0.1, 0.2, 0.5]);
});

test("fractions of a second are steps only for a span under a few seconds", () => {
  expect(SUBSECOND_SPAN).toBe(3);
  expect(incrsFor(2.5)[0]).toBe(0.1);
  expect(incrsFor(4)[0]).toBe(1); // 4 s on a wide chart: 1 s ticks, not 0.5 s
  expect(incrsFor(4)).toEqual(TIME_INCRS.filter((s) => s >= 1));
});

test("the uPlot axis labels each split for the step uPlot found", () => {
  const axis = timeAxis(UTC);
  expect(axis.incrs(null, 0, T, T + 8)).toEqual(incrsFor(8));
  expect(axis.space).toBeGreaterThanOrEqual(60); // "12:03:05" at 10px, with a gap
  expect(axis.values(null, [T, T + 2, T + 4], 0, 60, 2)).toEqual(["12:03:05", "12:03:07", "12:03:09"]);
});
