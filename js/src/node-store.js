// Other nodes' samples (a cluster read from Prometheus), shared by every view of one widget like
// the timeline's store: a Store of its own, with a fixed, smaller ring (a row comes once per
// scrape interval, not every tick), fed from `node_columns`, `node_history` and `node_samples`.
// Its columns grow as nodes answer; rows held keep their place (the new columns are missing in
// them, as they are in the kernel's).

import { Store, connectStore, uidOf } from "./store.js";

export const NODE_CAPACITY = 4096; // rows: an hour at a 1 s scrape interval, 17 h at 15 s
const NODES = { columns: "node_columns", history: "node_history", samples: "node_samples" };

const stores = new WeakMap();
const storesByUid = new Map();

export class NodeStore extends Store {
  constructor({ capacity = NODE_CAPACITY } = {}) {
    super({ capacity });
    this.version = null; // the cluster's column version of the newest rows taken
  }

  /**
   * Append a decoded `node_samples` message. Its rows must be as wide as the columns (else it
   * is rejected, as the timeline's are); one of a version older than rows already taken
   * belongs to columns since replaced and is rejected too.
   */
  appendSamples(samples) {
    const version = samples && Number.isInteger(samples.version) ? samples.version : null;
    if (version !== null && this.version !== null && version < this.version) {
      this.stats.messages += 1;
      this.stats.rejected += 1;
      return false;
    }
    const widthOk = samples && samples.width === this.columns.length;
    const appended = super.appendSamples(samples);
    if (widthOk && version !== null) this.version = version;
    return appended;
  }
}

/** The node store of `model`, created on first use. */
export function nodeStoreFor(model, options) {
  const uid = uidOf(model);
  let store = uid ? storesByUid.get(uid) : stores.get(model);
  if (!store) {
    store = new NodeStore(options);
    if (uid) storesByUid.set(uid, store);
    else stores.set(model, store);
  }
  return store;
}

/** Drop `model`'s node store (the model is gone). */
export function forgetNodeStore(model) {
  const uid = uidOf(model);
  if (uid) storesByUid.delete(uid);
  else stores.delete(model);
}

/** Feed `model`'s node store from the kernel; returns the cleanup. */
export function connectNodes(model, options) {
  return connectStore(model, nodeStoreFor(model, options), NODES);
}
