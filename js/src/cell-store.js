// The ledger as every view of one widget shares it: the `cells` trait (the whole ledger when
// the model was made or the page loaded) and then `cells` messages, each with the rows new
// since (docs/widget-protocol.md), so a new cell costs the wire one row, not 10,000. Kept per
// model like the timeline's store, with a revision that views watch and, built when asked
// for, a CellIndex of it by time (for the chart's bands).

import { CellIndex } from "./cell-index.js";
import { cellKey, validCells } from "./cells.js";
import { kindsOn } from "./kinds.js";
import { decodeCells } from "./messages.js";
import { uidOf } from "./store.js";

export class CellStore {
  constructor() {
    this.cells = []; // valid entries, oldest first (ledger order)
    this.keys = new Set(); // cellKey of each
    this.revision = 0;
    // each GPU's kinds of memory any entry held (for the "by kind" legend): learnt from each
    // row as it comes, so a new cell costs one row's look, not the ledger's; once seen, kept
    this.kindsSeen = new Map(); // GPU index -> Set of kind names
    this.listeners = new Set();
    this._index = null;
  }

  /** Call `fn(revision)` on every change; returns the unsubscribe function. */
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  _changed() {
    this.revision += 1;
    this._index = null;
    for (const fn of [...this.listeners]) fn(this.revision);
  }

  /** The whole ledger (the `cells` trait's value): replaces what is held. */
  setAll(value) {
    this.cells = validCells(value);
    this.keys = new Set(this.cells.map(cellKey));
    this.kindsSeen = new Map();
    for (const c of this.cells) this._learnKinds(c);
    this._changed();
  }

  /**
   * A `cells` message: `rows` appended (those past the newest `index` held; a row the ledger
   * already has, by key, is skipped), then the rows older than `first` (the oldest `index` the
   * kernel's ledger still holds) dropped. Returns whether anything changed.
   */
  append(msg) {
    if (!msg || msg.type !== "cells" || !Array.isArray(msg.rows)) return false;
    const last = this.cells.length ? this.cells[this.cells.length - 1].index : undefined;
    let changed = false;
    for (const row of validCells(msg.rows)) {
      if (Number.isInteger(last) && Number.isInteger(row.index) && row.index <= last) continue;
      const key = cellKey(row);
      if (this.keys.has(key)) continue;
      this.cells.push(row);
      this.keys.add(key);
      this._learnKinds(row);
      changed = true;
    }
    if (Number.isInteger(msg.first)) {
      let drop = 0;
      while (drop < this.cells.length && this.cells[drop].index < msg.first) drop++;
      if (drop) {
        for (const c of this.cells.splice(0, drop)) this.keys.delete(cellKey(c));
        changed = true;
      }
    }
    if (changed) this._changed();
    return changed;
  }

  _learnKinds(c) {
    if (!Array.isArray(c.kinds)) return;
    for (const gpu of new Set(c.kinds.map((k) => k?.gpu).filter(Number.isInteger))) {
      if (!this.kindsSeen.has(gpu)) this.kindsSeen.set(gpu, new Set());
      const seen = this.kindsSeen.get(gpu);
      for (const [kind] of kindsOn(c, gpu)) seen.add(kind);
    }
  }

  /** The kinds of memory entries held on any of GPUs `devices` (indices), once seen. */
  kindsOnDevices(devices) {
    const found = new Set();
    for (const d of devices) for (const kind of this.kindsSeen.get(d) ?? []) found.add(kind);
    return found;
  }

  /** Whether the ledger holds the entry of `key` (cells.cellKey). */
  has(key) {
    return this.keys.has(key);
  }

  /** The held entries by time (a CellIndex), built once per revision. */
  get index() {
    if (!this._index) this._index = new CellIndex(this.cells);
    return this._index;
  }
}

const stores = new WeakMap();
const storesByUid = new Map();

/** The cell store of `model`, created on first use (keyed like store.js's). */
export function cellStoreFor(model) {
  const uid = uidOf(model);
  let store = uid ? storesByUid.get(uid) : stores.get(model);
  if (!store) {
    store = new CellStore();
    if (uid) storesByUid.set(uid, store);
    else stores.set(model, store);
  }
  return store;
}

/** Drop `model`'s cell store (the model is gone). */
export function forgetCellStore(model) {
  const uid = uidOf(model);
  if (uid) storesByUid.delete(uid);
  else stores.delete(model);
}

/**
 * Feed `model`'s cell store: the `cells` trait now and on change, `cells` messages as they
 * come. Returns the cleanup that removes its listeners; connecting twice replaces the first.
 */
export function connectCells(model) {
  const store = cellStoreFor(model);
  if (store.disconnect) store.disconnect();
  const onTrait = () => store.setAll(model.get("cells"));
  const onMessage = (msg, buffers) => {
    const cells = decodeCells(msg, buffers);
    if (cells) store.append(cells);
  };
  onTrait();
  model.on("change:cells", onTrait);
  model.on("msg:custom", onMessage);
  const disconnect = () => {
    model.off("change:cells", onTrait);
    model.off("msg:custom", onMessage);
    if (store.disconnect === disconnect) store.disconnect = null;
  };
  store.disconnect = disconnect;
  return disconnect;
}
