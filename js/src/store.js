// The model-level state every view of one widget shares: the timeline (a snapshot from the
// `history` trait plus a ring of rows from `samples` messages), a revision counter, listeners.
// Created once per model (in `initialize`) and kept in a WeakMap keyed by the model, so views
// are cheap and a second view starts with everything the first one has.

import { decodeHistory, decodeSamples } from "./messages.js";
import { historySegment, ringSegment } from "./downsample.js";
import { DEFAULT_CAPACITY, Ring, bisect } from "./ring.js";

// anywidget hands `initialize` and each `render` a proxy of its own for one model, so the
// store is keyed by the widget's `_uid` trait; a model without one (tests) by the object.
const stores = new WeakMap();
const storesByUid = new Map();

/** The widget's `_uid` (what keys a model's stores), or null. */
export function uidOf(model) {
  const uid = typeof model.get === "function" ? model.get("_uid") : null;
  return uid ? String(uid) : null;
}

export class Store {
  /** @param {{capacity?: number}} options capacity: most live rows held (oldest dropped) */
  constructor({ capacity = DEFAULT_CAPACITY } = {}) {
    this.capacity = capacity;
    this.columns = []; // names, in the order of each row's values
    this.columnIndex = new Map(); // name -> its index in `columns` (a cluster has hundreds)
    this.columnInfo = []; // the same columns with their metadata
    this.ring = new Ring(0, capacity);
    this.history = null; // decoded `history`: { rows, width, times, mean, low, high }
    this.cursor = null; // timeline cursor just past the last row received
    this.revision = 0;
    this.epoch = 0; // counts changes other than appended rows (what drawing caches key on)
    this.listeners = new Set();
    this.pendingGap = false; // rows were lost; break the line before the next row
    this.stats = { messages: 0, rejected: 0, gaps: 0 };
  }

  /** Call `fn(revision)` on every change; returns the unsubscribe function. */
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  _changed() {
    this.revision += 1;
    for (const fn of [...this.listeners]) fn(this.revision);
  }

  /**
   * The timeline's columns: each the registry's metadata of one column ({name, unit, panel,
   * label, ...}), or just its name. Rows held so far are kept column by column (matched by name).
   */
  setColumns(value) {
    const info = Array.isArray(value) ? value.map(columnInfo) : [];
    const next = info.map((c) => c.name);
    const old = this.columns;
    const same = next.length === old.length && next.every((n, i) => n === old[i]);
    if (same && JSON.stringify(info) === JSON.stringify(this.columnInfo)) return false;
    this.columnInfo = info;
    if (same) {
      this._changed(); // only the metadata changed: redraw, the rows stay as they are
      return true;
    }
    this.ring = this.ring.length
      ? this.ring.remap(old, next)
      : new Ring(next.length, this.capacity);
    this.history = this.history ? remapHistory(this.history, old, next) : null;
    this.columns = next;
    this.columnIndex = new Map();
    next.forEach((n, i) => this.columnIndex.has(n) || this.columnIndex.set(n, i)); // the first, as indexOf
    this.pendingGap = false;
    this.epoch += 1;
    this._changed();
    return true;
  }

  /**
   * A decoded history snapshot (or null: none yet). Ignored when its width does not match the
   * columns: it belongs to other columns, and the next snapshot will match.
   */
  setHistory(history) {
    if (history && history.width !== this.columns.length) return false;
    if (history === this.history) return false;
    this.history = history;
    this.epoch += 1;
    this._changed();
    return true;
  }

  /** The newest time held (history or live), or NaN. */
  get lastTime() {
    if (this.ring.length) return this.ring.lastTime;
    const h = this.history;
    return h ? h.times[h.rows - 1] : NaN;
  }

  /** The oldest time drawn (history or live), or NaN. */
  get firstTime() {
    if (this.historyRowsUsed() > 0) return this.history.times[0];
    return this.ring.length ? this.ring.firstTime : NaN;
  }

  /** History rows older than the first live row: those are drawn; the rest the ring covers. */
  historyRowsUsed() {
    const h = this.history;
    if (!h) return 0;
    if (!this.ring.length) return h.rows;
    const t = this.ring.firstTime;
    return bisect(0, h.rows, (i) => h.times[i] < t);
  }

  /** Rows held for drawing: used history rows plus live rows (gap markers included). */
  get size() {
    return this.historyRowsUsed() + this.ring.length;
  }

  /** Row sources for the Downsampler, oldest first. */
  segments() {
    const used = this.historyRowsUsed();
    const out = [];
    if (used > 0) out.push(historySegment(this.history, 0, used));
    if (this.ring.length) out.push(ringSegment(this.ring));
    return out;
  }

  /** The newest non-NaN value of column `name` (looking back at most `lookback` rows), or null. */
  latest(name, lookback = 2000) {
    const c = this.columnIndex.get(name) ?? -1;
    if (c < 0) return null;
    const r = this.ring;
    for (let i = r.length - 1; i >= Math.max(0, r.length - lookback); i--) {
      const v = r.value(i, c);
      if (!Number.isNaN(v)) return v;
    }
    const h = this.history;
    if (h) {
      for (let i = h.rows - 1; i >= Math.max(0, h.rows - lookback); i--) {
        const v = h.mean[c][i];
        if (!Number.isNaN(v)) return v;
      }
    }
    return null;
  }

  /**
   * Append a decoded `samples` message. Rows not newer than what is held are skipped (a resend
   * or the overlap with the history snapshot); a `gap` flag or a `start` past the cursor puts a
   * break row before the new rows so no line is drawn across the missing time. A message whose
   * width is not the number of columns is rejected (and counts as a gap).
   */
  appendSamples(samples) {
    this.stats.messages += 1;
    if (!samples || samples.width !== this.columns.length) {
      this.stats.rejected += 1;
      this.pendingGap = true;
      return false;
    }
    const { start, rows, times, values } = samples;
    const lost = samples.gap || (this.cursor !== null && start > this.cursor);
    if (lost) this.pendingGap = true;
    this.cursor = start + rows;
    let last = this.lastTime;
    const held = Number.isFinite(last);
    if (!held) last = -Infinity;
    let appended = 0;
    for (let r = 0; r < rows; r++) {
      const t = times[r];
      if (!(t > last)) continue; // not newer (or NaN): keeps times ascending
      if (this.pendingGap) {
        if (held) {
          this.ring.appendBreak(Number.isFinite(last) ? (last + t) / 2 : t);
          this.stats.gaps += 1;
        }
        this.pendingGap = false;
      }
      this.ring.append(times, values, 1, r);
      last = t;
      appended += 1;
    }
    if (appended) this._changed();
    return appended > 0;
  }
}

function remapHistory(h, oldNames, newNames) {
  const from = newNames.map((n) => oldNames.indexOf(n));
  const pick = (cols) => from.map((k) => (k < 0 ? new Float32Array(h.rows).fill(NaN) : cols[k]));
  return { rows: h.rows, width: newNames.length, times: h.times, mean: pick(h.mean), low: pick(h.low), high: pick(h.high) };
}

/** The store of `model`, created on first use. */
export function storeFor(model, options) {
  const uid = uidOf(model);
  let store = uid ? storesByUid.get(uid) : stores.get(model);
  if (!store) {
    store = new Store(options);
    if (uid) storesByUid.set(uid, store);
    else stores.set(model, store);
  }
  return store;
}

/** Drop `model`'s store (the model is gone). */
export function forgetStore(model) {
  const uid = uidOf(model);
  if (uid) storesByUid.delete(uid);
  else stores.delete(model);
}

// The traits and the custom message that feed the timeline's store.
const TIMELINE = { columns: "columns", history: "history", samples: "samples" };

/**
 * Feed `model`'s store from the kernel: `columns` and `history` now and on change, `samples`
 * custom messages as they come. Returns the cleanup that removes every listener it added.
 * Connecting twice (e.g. a hot reload) replaces the first connection.
 */
export function connectModel(model, options) {
  return connectStore(model, storeFor(model, options), TIMELINE);
}

/**
 * Feed `store` from `model`'s traits `names.columns` and `names.history` and its custom
 * messages of type `names.samples` (the timeline's, or the cluster's: node-store.js).
 */
export function connectStore(model, store, names) {
  if (store.disconnect) store.disconnect();

  const readHistory = () => {
    const h = decodeHistory(model.get(names.history));
    if (h === null) {
      // Empty bytes: no snapshot yet. Keep whatever is held (it is at least as new).
      return;
    }
    store.setHistory(h);
  };
  const onColumns = () => {
    store.setColumns(model.get(names.columns));
    readHistory(); // a snapshot that arrived before its columns did is usable now
  };
  const onHistory = () => {
    store.setColumns(model.get(names.columns)); // no-op unless the columns changed too
    readHistory();
  };
  const onMessage = (msg, buffers) => {
    if (msg && msg.type === names.samples) store.appendSamples(decodeSamples(msg, buffers, names.samples));
  };

  onColumns();
  model.on(`change:${names.columns}`, onColumns);
  model.on(`change:${names.history}`, onHistory);
  model.on("msg:custom", onMessage);

  const disconnect = () => {
    model.off(`change:${names.columns}`, onColumns);
    model.off(`change:${names.history}`, onHistory);
    model.off("msg:custom", onMessage);
    if (store.disconnect === disconnect) store.disconnect = null;
  };
  store.disconnect = disconnect;
  return disconnect;
}

/** One entry of the `columns` trait as metadata with a string `name` (a bare name: no more). */
function columnInfo(entry) {
  if (entry && typeof entry === "object") return { ...entry, name: String(entry.name) };
  return { name: String(entry) };
}
