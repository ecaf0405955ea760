// Payloads built exactly as docs/widget-protocol.md describes them, the way the kernel packs
// them (numpy little-endian arrays), delivered the way anywidget does (DataView buffers).
// `misalign` puts each buffer at an odd offset inside a larger ArrayBuffer, as a DataView over
// a comm message's bytes may be.

function view(bytes, misalign) {
  if (!misalign) return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const big = new Uint8Array(bytes.byteLength + 3);
  big.set(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), 3);
  return new DataView(big.buffer, 3, bytes.byteLength);
}

/**
 * A `samples` custom message and its two buffers.
 * @param {number} start cursor of the first row
 * @param {number[]} times unix seconds
 * @param {number[][]} rows one array of `width` values per row (NaN for missing)
 * @param {object} options gap, fill, afterCell (the main thread's message after a cell):
 *   the header's flags; misalign: the buffers at odd offsets
 */
export function samples(start, times, rows, { gap = false, misalign = false, fill = false, afterCell = false } = {}) {
  const width = rows.length ? rows[0].length : 0;
  const t = new Float64Array(times);
  const v = new Float32Array(rows.flat());
  const msg = { type: "samples", start, rows: times.length, width, gap };
  if (fill) msg.fill = true;
  if (afterCell) msg.after_cell = true;
  return [msg, [view(new Uint8Array(t.buffer), misalign), view(new Uint8Array(v.buffer), misalign)]];
}

/**
 * A `cells` custom message and its buffers: the rows as UTF-8 JSON lists, `perBuffer` rows each
 * (as the kernel makes them, a few at a time).
 * @param {number} first the index of the oldest record the kernel's ledger holds
 * @param {object[]} rows as the `cells` trait holds them
 * @param {object} options misalign: the buffers at odd offsets; perBuffer: rows a buffer
 */
export function cells(first, rows, { misalign = false, perBuffer = 8 } = {}) {
  const buffers = [];
  for (let i = 0; i < rows.length; i += perBuffer) {
    const bytes = new TextEncoder().encode(JSON.stringify(rows.slice(i, i + perBuffer)));
    buffers.push(view(bytes, misalign));
  }
  return [{ type: "cells", first, count: rows.length }, buffers];
}

/** The packed `history` bytes: uint32 rows, uint32 width, times, means, lows, highs (LE). */
export function packHistory(times, mean, low = mean, high = mean) {
  const rows = times.length;
  const width = rows ? mean[0].length : 0;
  const buf = new ArrayBuffer(8 + rows * 8 + 3 * rows * width * 4);
  const dv = new DataView(buf);
  dv.setUint32(0, rows, true);
  dv.setUint32(4, width, true);
  let at = 8;
  for (const x of times) {
    dv.setFloat64(at, x, true);
    at += 8;
  }
  for (const block of [mean, low, high]) {
    for (const row of block) {
      for (const x of row) {
        dv.setFloat32(at, x, true);
        at += 4;
      }
    }
  }
  return new Uint8Array(buf);
}
