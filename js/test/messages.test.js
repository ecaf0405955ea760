import { describe, expect, test } from "vitest";
import { decodeCells, decodeHistory, decodeSamples, toDataView } from "../src/messages.js";
import { cells, packHistory, samples } from "./protocol.js";

describe("decodeSamples", () => {
  test("decodes the header and both buffers as the protocol lays them out", () => {
    const [msg, buffers] = samples(40, [100.5, 101], [[1, 2, NaN], [4, 5, 6]]);
    const d = decodeSamples(msg, buffers);
    expect(d).toMatchObject({ start: 40, rows: 2, width: 3, gap: false });
    expect(Array.from(d.times)).toEqual([100.5, 101]);
    expect(Array.from(d.values.slice(0, 2))).toEqual([1, 2]);
    expect(d.values[2]).toBeNaN();
    expect(d.values[5]).toBe(6);
  });

  test("buffers at unaligned offsets decode the same", () => {
    const [msg, buffers] = samples(0, [1, 2, 3], [[1], [2], [3]], { misalign: true });
    expect(buffers[0].byteOffset % 8).not.toBe(0);
    const d = decodeSamples(msg, buffers);
    expect(Array.from(d.times)).toEqual([1, 2, 3]);
    expect(Array.from(d.values)).toEqual([1, 2, 3]);
  });

  test("ArrayBuffer and Uint8Array buffers are accepted too", () => {
    const [msg, [t, v]] = samples(0, [7], [[8]]);
    const asBuffer = decodeSamples(msg, [t.buffer, new Uint8Array(v.buffer)]);
    expect(asBuffer.times[0]).toBe(7);
    expect(asBuffer.values[0]).toBe(8);
  });

  test("the gap flag is carried", () => {
    const [msg, buffers] = samples(9, [1], [[1]], { gap: true });
    expect(decodeSamples(msg, buffers).gap).toBe(true);
  });

  test("other messages and short buffers are rejected", () => {
    const [msg, buffers] = samples(0, [1, 2], [[1], [2]]);
    expect(decodeSamples({ ...msg, type: "other" }, buffers)).toBeNull();
    expect(decodeSamples({ ...msg, rows: 3 }, buffers)).toBeNull();
    expect(decodeSamples(msg, [buffers[0]])).toBeNull();
    expect(decodeSamples({ ...msg, rows: -1 }, buffers)).toBeNull();
  });
});

describe("decodeCells", () => {
  const row = { index: 3, name: "[4]", label: "x = 'ü' # <b>not html</b>", start: 100.25, peak: null };
  const many = [0, 1, 2, 3, 4].map((i) => ({ ...row, index: 3 + i }));

  test("joins the rows of its buffers in order, at any offset, text as it was", () => {
    for (const misalign of [false, true]) {
      const [msg, buffers] = cells(2, many, { misalign, perBuffer: 2 });
      expect(buffers.length).toBe(3);
      expect(decodeCells(msg, buffers)).toEqual({ type: "cells", first: 2, rows: many });
    }
  });

  test("no buffers and a count of 0: no new rows, `first` still said", () => {
    expect(decodeCells({ type: "cells", first: 9, count: 0 }, [])).toEqual({ type: "cells", first: 9, rows: [] });
  });

  test("other messages, bad JSON, a non-list or rows other than counted are rejected", () => {
    const [msg, buffers] = cells(0, many, { perBuffer: 2 });
    const bytes = (text) => new TextEncoder().encode(text);
    expect(decodeCells({ ...msg, type: "samples" }, buffers)).toBeNull();
    expect(decodeCells(msg, buffers.slice(1))).toBeNull(); // (a buffer missing: too few rows)
    expect(decodeCells(msg, [])).toBeNull();
    expect(decodeCells({ ...msg, count: "5" }, buffers)).toBeNull();
    expect(decodeCells(msg, [...buffers.slice(0, 2), bytes("[{")])).toBeNull();
    expect(decodeCells(msg, [...buffers.slice(0, 2), bytes('{"rows": []}')])).toBeNull();
    expect(decodeCells(null, buffers)).toBeNull();
  });
});

describe("decodeHistory", () => {
  const times = [10, 20];
  const mean = [[1, 2], [3, 4]];
  const low = [[0, 1], [2, 3]];
  const high = [[2, 3], [4, 5]];

  test("decodes rows, width, times, means, lows and highs", () => {
    const h = decodeHistory(packHistory(times, mean, low, high));
    expect(h.rows).toBe(2);
    expect(h.width).toBe(2);
    expect(Array.from(h.times)).toEqual([10, 20]);
    // column by column: column 0 holds the first value of each row
    expect(h.mean.map((c) => Array.from(c))).toEqual([[1, 3], [2, 4]]);
    expect(h.low.map((c) => Array.from(c))).toEqual([[0, 2], [1, 3]]);
    expect(h.high.map((c) => Array.from(c))).toEqual([[2, 4], [3, 5]]);
  });

  test("accepts a DataView (also unaligned), an ArrayBuffer or a Uint8Array", () => {
    const bytes = packHistory(times, mean, low, high);
    const shifted = new Uint8Array(bytes.length + 1);
    shifted.set(bytes, 1);
    for (const raw of [
      new DataView(bytes.buffer),
      new DataView(shifted.buffer, 1, bytes.length),
      bytes.buffer,
      bytes,
    ]) {
      expect(decodeHistory(raw).high.map((c) => Array.from(c))).toEqual([[2, 4], [3, 5]]);
    }
  });

  test("empty bytes mean no history; truncated bytes are rejected", () => {
    expect(decodeHistory(new DataView(new ArrayBuffer(0)))).toBeNull();
    expect(decodeHistory(new Uint8Array(0))).toBeNull();
    expect(decodeHistory(null)).toBeNull();
    expect(decodeHistory(packHistory([], []))).toBeNull();
    const bytes = packHistory(times, mean, low, high);
    expect(decodeHistory(bytes.slice(0, bytes.length - 1))).toBeNull();
  });

  test("toDataView leaves a DataView as it is", () => {
    const dv = new DataView(new ArrayBuffer(4));
    expect(toDataView(dv)).toBe(dv);
    expect(toDataView(42)).toBeNull();
  });
});
