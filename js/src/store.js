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
    this.historyCursor = null; // the cursor the kernel packed `history` at (its rows are in it)
    this.revision = 0;
    this.epoch = 0; // counts changes other than appended rows (what drawing caches key on)
    this.listeners = new Set();
    this.pendingGap = false; // rows were lost; break the line before the next row
    // fromThread: samples messages the sampler's thread sent (not after a cell); asked:
    // resend requests; dropped: of those, for rows the front end dropped (the view's note);
    // filled: rows sent again for those; caughtUp: the other rows sent again (a page that
    // connected late or again, a reconnect): no note
    this.stats = {
      messages: 0, rejected: 0, gaps: 0, fromThread: 0, asked: 0, dropped: 0, filled: 0, caughtUp: 0,
    };
    this.requested = new Map(); // resend requests without their answer: to -> {from, dropped}
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

  /** The times of the rows drawn, oldest first, NaN for a break in the lines: what a browser
   * test reads (through the view's element) to see that nothing is missing. */
  times() {
    const used = this.historyRowsUsed();
    const r = this.ring;
    const out = new Float64Array(used + r.length);
    for (let i = 0; i < used; i++) out[i] = this.history.times[i];
    for (let i = 0; i < r.length; i++) out[used + i] = r.isBreak(i) ? NaN : r.time(i);
    return out;
  }

  /** Column `name`'s values for the rows drawn, parallel to times() (NaN at a break, and for
   * a column not held): what a browser test reads to compare the numbers across a reload. */
  values(name) {
    const c = this.columnIndex.get(name) ?? -1;
    const used = this.historyRowsUsed();
    const r = this.ring;
    const out = new Float64Array(used + r.length).fill(NaN);
    if (c < 0) return out;
    for (let i = 0; i < used; i++) out[i] = this.history.mean[c][i];
    for (let i = 0; i < r.length; i++) if (!r.isBreak(i)) out[used + i] = r.value(i, c);
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
    if (!samples.afterCell) this.stats.fromThread += 1;
    const base = this.cursor ?? this.historyCursor; // before the first message: the history's
    const lost = samples.gap || (base !== null && start > base);
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

/**
 * Whether the rows missing before `samples` were dropped by the front end (one that drops what
 * the kernel's background thread sends: Colab), rather than missed by a page that connected
 * after they were sent (Voilà, marimo, a reload) or lost to a reconnect.
 *
 * Such a front end shows only what the main thread sends after each cell (`afterCell`), so
 * it never shows a message of the sampler's thread; a page that gets any of those is not one,
 * whatever it missed.
 */
export function droppedByFrontEnd(store, samples) {
  return samples.afterCell === true && store.stats.fromThread === 0;
}

/**
 * The rows a `samples` message shows were never received, as the `resend` request for them
 * ({type, from, to}: the cursors of the missing rows), or null. Not for a `gap` message (the
 * kernel itself no longer had them) or one of other columns. The store remembers the request,
 * and whether a front end dropped those rows (`droppedByFrontEnd`), so that the answer's
 * rows are known to fill the whole hole and are counted as what they are.
 */
export function missingRows(store, samples) {
  const held = store.cursor ?? store.historyCursor; // before the first message: the history's
  if (!samples || samples.gap || held === null) return null;
  if (samples.width !== store.columns.length || !(samples.start > held)) return null;
  const dropped = droppedByFrontEnd(store, samples);
  store.requested.set(samples.start, { from: held, dropped });
  store.stats.asked += 1;
  if (dropped) store.stats.dropped += 1;
  return { type: "resend", from: held, to: samples.start };
}

/**
 * Merge a `fill` message (rows the kernel sent again, older than some held) into the ring, in
 * time order; a row held already stays. When it answers a request (its last row is just before
 * the rows that showed the hole), the break drawn for the hole goes; if the kernel no longer
 * had the first of them (`gap`), a break goes just before the rows it sent. Rebuilds the ring:
 * this happens once per hole, after a cell, in a front end that drops the sampler thread's
 * messages.
 */
export function fillRows(store, samples) {
  if (!samples || samples.width !== store.columns.length || samples.rows === 0) return false;
  const { times, values, rows, width, start, gap } = samples;
  const asked = store.requested.get(start + rows);
  const answers = asked !== undefined && asked.from <= start;
  if (answers) store.requested.delete(start + rows);
  const old = store.ring;
  const real = (i) => !old.isBreak(i);
  let before = old.lowerBound(times[0]) - 1;
  while (before >= 0 && !real(before)) before -= 1;
  let after = old.upperBound(times[rows - 1]);
  while (after < old.length && !real(after)) after += 1;
  const next = new Ring(width, store.capacity);
  next._grow(old.length + rows + 1);
  const copyHeld = (i) => {
    const p = old.slot(i);
    const q = next._push(old.times[p], old.breaks[p] === 1);
    for (let c = 0; c < width; c++) next.cols[c][q] = old.cols[c][p];
  };
  const copySent = (r) => {
    if (r === 0 && answers && gap) {
      const t = before >= 0 ? (old.time(before) + times[0]) / 2 : times[0];
      const q = next._push(t, true);
      for (const col of next.cols) col[q] = NaN;
    }
    const q = next._push(times[r], false);
    for (let c = 0; c < width; c++) next.cols[c][q] = values[r * width + c];
  };
  let i = 0;
  let r = 0;
  let added = 0;
  while (i < old.length || r < rows) {
    if (answers && i < old.length && !real(i) && i > before && i < after) {
      i += 1; // the hole's break: the rows it stood for are here now
      continue;
    }
    const held = i < old.length ? old.time(i) : Infinity;
    const sent = r < rows ? times[r] : Infinity;
    if (held < sent || (held === sent && !real(i))) {
      copyHeld(i++); // on a tie, a break first: the line breaks before the row
    } else if (held === sent) {
      copyHeld(i++);
      r += 1; // held already
    } else {
      copySent(r++);
      added += 1;
    }
  }
  store.ring = next;
  if (answers && asked.dropped) store.stats.filled += added;
  else store.stats.caughtUp += added;
  store.epoch += 1;
  store._changed();
  return added > 0;
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
// Only the timeline's rows are asked for again: the cluster's come every scrape interval and a
// missed one is just a break.
const TIMELINE = { columns: "columns", history: "history", samples: "samples", resend: true };

// How long a page waits for the sampler's thread's first `samples` message before it asks the
// kernel to send from its main thread too (`main_thread`): at least this, or four intervals.
export const QUIET_MS = 3000;

/**
 * After `wait` ms, if no `samples` message of the sampler's thread has come, ask the kernel to
 * send what a cell's start and end change from its main thread too: this front end drops what
 * other threads send (Colab does). Once, per connection; returns what cancels it.
 */
function askForTheMainThreadIfQuiet(model, store, wait) {
  if (typeof model.send !== "function") return () => {};
  const timer = setTimeout(() => {
    if (store.stats.fromThread === 0) model.send({ type: "main_thread" });
  }, wait);
  return () => clearTimeout(timer);
}

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
    if (names.resend) {
      const at = model.get("history_cursor");
      if (Number.isInteger(at) && at >= 0) store.historyCursor = at;
    }
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
    if (!msg || msg.type !== names.samples) return;
    const samples = decodeSamples(msg, buffers, names.samples);
    if (names.resend && msg.fill === true) {
      fillRows(store, samples);
      return;
    }
    const request = names.resend ? missingRows(store, samples) : null;
    store.appendSamples(samples); // drawn at once, with a break where rows are missing
    if (request && typeof model.send === "function") model.send(request);
  };

  onColumns();
  model.on(`change:${names.columns}`, onColumns);
  model.on(`change:${names.history}`, onHistory);
  model.on("msg:custom", onMessage);
  const interval = Number(model.get("interval")) || 0;
  const cancelAsk = names.resend
    ? askForTheMainThreadIfQuiet(model, store, Math.max(QUIET_MS, 4000 * interval))
    : () => {};

  const disconnect = () => {
    cancelAsk();
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
