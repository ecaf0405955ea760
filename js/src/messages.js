// Decoding the kernel's binary payloads (docs/widget-protocol.md): the `samples` custom message
// with its two buffers, the `cells` message's rows (UTF-8 JSON lists, one a buffer), and the
// packed `history` trait. The numbers of `samples` and `history` are little-endian; their
// decoders copy into fresh, aligned typed arrays: anywidget hands over DataViews whose
// byteOffset is not guaranteed to be a multiple of 8.

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const TEXT = new TextDecoder();

/** A DataView over a DataView, ArrayBuffer, typed array, or base64 string; null otherwise. */
export function toDataView(raw) {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof DataView) return raw;
  if (ArrayBuffer.isView(raw)) return new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const tag = Object.prototype.toString.call(raw);
  // By tag, not instanceof: a buffer made in another realm (an iframe, a test DOM) still counts.
  if (tag === "[object ArrayBuffer]" || tag === "[object SharedArrayBuffer]") {
    return new DataView(raw);
  }
  if (typeof raw === "string") {
    // Not what ipywidgets sends for bytes, but cheap to accept (e.g. a JSON-serialized state).
    if (raw === "") return new DataView(new ArrayBuffer(0));
    try {
      const bin = atob(raw);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      return new DataView(bytes.buffer);
    } catch {
      return null;
    }
  }
  return null;
}

function copyBytes(dv, offset, length) {
  const start = dv.byteOffset + offset;
  return dv.buffer.slice(start, start + length);
}

/** `n` little-endian float64 from `dv` at byte `offset`, as a new Float64Array. */
export function readFloat64(dv, offset, n) {
  if (LITTLE_ENDIAN) return new Float64Array(copyBytes(dv, offset, n * 8));
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = dv.getFloat64(offset + i * 8, true);
  return out;
}

/** `n` little-endian float32 from `dv` at byte `offset`, as a new Float32Array. */
export function readFloat32(dv, offset, n) {
  if (LITTLE_ENDIAN) return new Float32Array(copyBytes(dv, offset, n * 4));
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = dv.getFloat32(offset + i * 4, true);
  return out;
}

function isCount(x) {
  return Number.isInteger(x) && x >= 0;
}

/**
 * A `samples` message (or, with `type`, a `node_samples` one) as { start, rows, width, gap,
 * afterCell, version, times: Float64Array(rows), values: Float32Array(rows*width) }, or null when it is not
 * one or is malformed (a wrong type, missing buffers, or buffers shorter than the header says).
 */
export function decodeSamples(msg, buffers, type = "samples") {
  if (!msg || msg.type !== type) return null;
  const { start, rows, width } = msg;
  if (!isCount(rows) || !isCount(width) || !Number.isFinite(start)) return null;
  if (!buffers || buffers.length < 2) return null;
  const tv = toDataView(buffers[0]);
  const vv = toDataView(buffers[1]);
  if (!tv || !vv) return null;
  if (tv.byteLength < rows * 8 || vv.byteLength < rows * width * 4) return null;
  return {
    start,
    rows,
    width,
    gap: msg.gap === true,
    afterCell: msg.after_cell === true,
    version: Number.isInteger(msg.version) ? msg.version : null,
    times: readFloat64(tv, 0, rows),
    values: readFloat32(vv, 0, rows * width),
  };
}

/**
 * A `cells` message as { type: "cells", first, rows } (the form `CellStore.append` takes), its
 * rows those of its buffers in order (each a UTF-8 JSON list: the kernel makes a few rows at a
 * time), or null when it is not one, a buffer is not such a list, or they hold other than
 * `count` rows. No buffers: no new rows (the ledger let go of old ones).
 */
export function decodeCells(msg, buffers) {
  if (!msg || msg.type !== "cells" || !isCount(msg.count)) return null;
  const rows = [];
  for (const raw of buffers ?? []) {
    const dv = toDataView(raw);
    if (!dv) return null;
    let some;
    try {
      some = JSON.parse(TEXT.decode(dv));
    } catch {
      return null;
    }
    if (!Array.isArray(some)) return null;
    for (const row of some) rows.push(row);
  }
  return rows.length === msg.count ? { type: "cells", first: msg.first, rows } : null;
}

/**
 * The packed `history` trait as { rows, width, times, mean, low, high }, each of mean, low and
 * high an array of `width` columns (Float32Array(rows) each: the store's layout), or null when
 * it is empty (no history yet) or malformed (shorter than its header says).
 */
export function decodeHistory(raw) {
  const dv = toDataView(raw);
  if (!dv || dv.byteLength < 8) return null;
  const rows = dv.getUint32(0, true);
  const width = dv.getUint32(4, true);
  const block = rows * width * 4;
  const need = 8 + rows * 8 + 3 * block;
  if (rows === 0 || dv.byteLength < need) return null;
  let at = 8;
  const times = readFloat64(dv, at, rows);
  at += rows * 8;
  const blocks = [];
  for (let k = 0; k < 3; k++, at += block) blocks.push(toColumns(readFloat32(dv, at, rows * width), rows, width));
  const [mean, low, high] = blocks;
  return { rows, width, times, mean, low, high };
}

/** Row-major `values` (rows x width) as `width` column arrays. */
export function toColumns(values, rows, width) {
  const cols = Array.from({ length: width }, () => new Float32Array(rows));
  for (let i = 0; i < rows; i++) {
    const o = i * width;
    for (let c = 0; c < width; c++) cols[c][i] = values[o + c];
  }
  return cols;
}
