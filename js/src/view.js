// One view of the widget: builds the DOM (status line, controls, chart or the other nodes'
// view, table) under `el`, draws on animation frames when a store or the view state changed,
// and returns the cleanup that undoes all of it. Views hold no timeline data; the model's
// stores do (this kernel's timeline, the cluster's and the ledger).

import { cellStoreFor, connectCells } from "./cell-store.js";
import { runningCell } from "./cells.js";
import { Chart, panelSpecs } from "./chart.js";
import { ALL_NODES, Controls, LOCAL, hostValue } from "./controls.js";
import { formatSpan } from "./format.js";
import { nodeStoreFor } from "./node-store.js";
import { hostsOf, validNodeColumns, validNodes } from "./nodes.js";
import { NodesView } from "./nodes-view.js";
import { storeFor } from "./store.js";
import { styleElement } from "./style.js";
import { CellTable } from "./table.js";

const DEFAULT_WIDTH = 640; // CSS px, until the element is laid out
const VIEW_TRAITS = ["running", "marks", "status", "devices"]; // the ledger: its own store
// Refreshed every 2 s while other nodes answer: their texts change, not the panels' rows.
const TEXT_TRAITS = ["nodes", "cluster_status"];
let views = 0;

function validDevices(value) {
  if (!Array.isArray(value)) return [];
  return value.filter((d) => d && typeof d === "object" && Number.isInteger(d.index));
}

function validMarks(value) {
  if (!Array.isArray(value)) return [];
  return value.filter((m) => m && typeof m === "object" && Number.isFinite(m.time));
}

/** The host selector's value to show: `wanted` while it names a host that answered, else
 * this kernel's panels (no other node) or all nodes. */
export function shownNode(wanted, hosts) {
  if (!hosts.length) return LOCAL;
  if (wanted === LOCAL || wanted === ALL_NODES) return wanted;
  return hosts.some((h) => hostValue(h) === wanted) ? wanted : ALL_NODES;
}

/** "8 s of data" while the chosen window is longer than what is held, else "". */
export function shownNote(store, window) {
  const span = store.lastTime - store.firstTime;
  return window && Number.isFinite(span) && span < window ? `${formatSpan(span)} of data` : "";
}

/**
 * Render a view of `model` into `el`.
 * @param {{model: object, el: HTMLElement}} ctx anywidget's render arguments
 * @param {object} deps UPlot (constructor), and optionally requestFrame / cancelFrame /
 *   ResizeObserver / IntersectionObserver (defaults: the browser's) and now (unix seconds,
 *   for the age of other nodes' answers; default the clock)
 * @returns {() => void} cleanup
 */
export function createView({ model, el }, deps) {
  const UPlot = deps.UPlot;
  const requestFrame =
    deps.requestFrame ?? globalThis.requestAnimationFrame?.bind(globalThis) ?? ((fn) => setTimeout(fn, 16));
  const cancelFrame =
    deps.cancelFrame ?? globalThis.cancelAnimationFrame?.bind(globalThis) ?? ((id) => clearTimeout(id));
  const Observer = deps.ResizeObserver ?? globalThis.ResizeObserver;
  const now = deps.now ?? (() => Date.now() / 1000);

  const store = storeFor(model);
  const nodeStore = nodeStoreFor(model);
  const cellStore = cellStoreFor(model);
  const disconnectCells = cellStore.disconnect ? null : connectCells(model); // no initialize()
  const state = {
    window: 600, // seconds, or null for all
    node: LOCAL, // LOCAL: this kernel's panels; ALL_NODES; or hostValue(host): one host's
    gpu: null, // nvml index, "all", or null: the first GPU
    toggles: { power: false, temperature: false, rss: false, kinds: false },
    highlight: null, // cellKey of the selected cell
    hidden: new Set(), // series switched off in a legend, by "panelId:column"
  };

  const root = document.createElement("div");
  root.className = "nbgpumon-widget";
  root.dataset.points = "0";
  // for browser tests: the rows' times, as the chart draws them (NaN: a break in the lines)
  root.nbgpumonTimes = () => Array.from(store.times());
  // ... and one column's values, parallel to them (NaN: a break, or a column not held)
  root.nbgpumonValues = (name) => Array.from(store.values(name));
  const status = document.createElement("div");
  status.className = "nbgpumon-status";
  const note = document.createElement("div");
  note.className = "nbgpumon-note";
  note.hidden = true;
  const chartEl = document.createElement("div");
  chartEl.className = "nbgpumon-chart";
  const empty = document.createElement("div");
  empty.className = "nbgpumon-empty";
  empty.textContent = "no timeline yet";
  empty.hidden = true;

  let frame = null;
  let dirty = true;
  let textsDirty = false;
  let drawnRevision = -1;
  let drawnNodeRevision = -1;
  let width = 0;
  let observedWidth = 0; // root.clientWidth as the ResizeObserver last saw it (0: not yet)
  let drawnCells = -1; // the cell store's revision last drawn

  const invalidate = () => {
    dirty = true;
    schedule();
  };
  const schedule = () => {
    if (frame === null) frame = requestFrame(draw);
  };
  const select = (key) => {
    state.highlight = key;
    invalidate();
  };

  const controls = new Controls({
    state: { ...state, gpu: "all" },
    onChange: (patch) => {
      if ("window" in patch) state.window = patch.window;
      if ("node" in patch) state.node = patch.node;
      if ("gpu" in patch) state.gpu = patch.gpu;
      if (patch.toggles) state.toggles = { ...state.toggles, ...patch.toggles };
      invalidate();
    },
  });
  const chart = new Chart({
    container: chartEl,
    UPlot,
    syncKey: `nbgpumon-${++views}`,
    onSelect: (key) => {
      select(key === state.highlight ? null : key);
      if (key) table.reveal(key);
    },
    onSeriesToggle: (key, show) => (show ? state.hidden.delete(key) : state.hidden.add(key)),
    onVisible: invalidate,
    IntersectionObserver: deps.IntersectionObserver,
  });
  const nodesView = new NodesView({
    UPlot,
    syncKey: `nbgpumon-nodes-${views}`,
    onHost: (host) => {
      state.node = hostValue(host);
      invalidate();
    },
    onSelect: (key) => {
      select(key === state.highlight ? null : key);
      if (key) table.reveal(key);
    },
    onSeriesToggle: (key, show) => (show ? state.hidden.delete(key) : state.hidden.add(key)),
    onVisible: invalidate,
    IntersectionObserver: deps.IntersectionObserver,
  });
  const table = new CellTable({ onSelect: select, onScroll: schedule });

  root.append(styleElement(), status, note, controls.el, chartEl, empty, nodesView.el, table.el);
  el.append(root);

  // Columns found with a value (allocator lines join their panel then); once seen, kept.
  const seenColumns = new Set();
  function seen(name) {
    if (seenColumns.has(name)) return true;
    const v = store.latest(name);
    if (v === null || v === undefined || Number.isNaN(v)) return false;
    seenColumns.add(name);
    return true;
  }

  function draw() {
    frame = null;
    const nodesChanged = nodeStore.revision !== drawnNodeRevision;
    if (cellStore.revision !== drawnCells) dirty = true;
    if (!dirty && !textsDirty && store.revision === drawnRevision && !nodesChanged) {
      table.scrolled(); // the table's rows follow its scrolling, on this frame
      return;
    }
    // Other nodes' panels change with their rows (one per scrape interval) and the view state,
    // not with this kernel's samples (twice a second): those only refresh their tables' texts.
    const panelsChanged = dirty || nodesChanged;
    dirty = false;
    textsDirty = false;
    drawnRevision = store.revision;
    drawnNodeRevision = nodeStore.revision;
    drawnCells = cellStore.revision;

    const devices = validDevices(model.get("devices"));
    const cells = cellStore.cells;
    const running = runningCell(model.get("running"), cellStore, store.lastTime, (name) => store.latest(name), store.columnInfo);
    const marks = validMarks(model.get("marks"));
    const text = model.get("status");
    const line = typeof text === "string" ? text : "";
    if (status.textContent !== line) status.textContent = line; // the same text: no layout to redo
    const missed = missedNote(store.stats);
    if (note.textContent !== missed) note.textContent = missed;
    note.hidden = missed === "";

    let gpu = state.gpu ?? (devices.length ? devices[0].index : "all");
    if (gpu !== "all" && !devices.some((d) => d.index === gpu)) gpu = devices.length ? devices[0].index : "all";
    const columns = store.columnInfo;
    const nodes = validNodes(model.get("nodes"));
    const nodeColumns = validNodeColumns(nodeStore.columnInfo);
    const hosts = hostsOf(nodes, nodeColumns);
    const node = shownNode(state.node, hosts);
    const local = node === LOCAL;
    const shown = shownNote(local ? store : nodeStore, state.window);
    const shownGpus = gpu === "all" ? devices.map((d) => d.index) : [gpu];
    const kinds = cellStore.kindsOnDevices(shownGpus);
    controls.update({ devices, columns, state: { ...state, gpu, node }, shown, hosts, kinds });

    // The observer's width once it has one: reading clientWidth here would lay the page out
    // again whenever anything above changed it, every frame.
    width = observedWidth || root.clientWidth || el.clientWidth || width || DEFAULT_WIDTH;
    const shared = { window: state.window, width, cells: cellStore.index, running, marks, highlight: state.highlight, hidden: state.hidden, kinds: Boolean(state.toggles.kinds) };
    chartEl.hidden = !local;
    nodesView.el.hidden = local;
    if (local) {
      const specs = panelSpecs({ devices, columns, gpu, toggles: state.toggles, seen });
      chart.update({ store, specs, ...shared });
      empty.hidden = specs.length > 0;
      nodesView.clear();
    } else {
      empty.hidden = true;
      const clusterStatus = model.get("cluster_status");
      nodesView.update({
        store: nodeStore,
        nodes,
        columns: nodeColumns,
        host: node === ALL_NODES ? null : node.slice(hostValue("").length),
        status: typeof clusterStatus === "string" ? clusterStatus : "",
        now: now(),
        panels: panelsChanged,
        ...shared,
      });
    }
    table.update(cells, cellStore.revision, state.highlight, running);
    root.dataset.points = String(store.size);
  }

  const unsubscribe = store.subscribe(schedule);
  const unsubscribeCells = cellStore.subscribe(schedule);
  const unsubscribeNodes = nodeStore.subscribe(schedule);
  const onTrait = () => invalidate();
  const onText = () => {
    textsDirty = true;
    schedule();
  };
  const traitEvents = VIEW_TRAITS.map((name) => `change:${name}`);
  const textEvents = TEXT_TRAITS.map((name) => `change:${name}`);
  for (const ev of traitEvents) model.on(ev, onTrait);
  for (const ev of textEvents) model.on(ev, onText);

  let observer = null;
  if (typeof Observer === "function") {
    observer = new Observer(() => {
      const w = root.clientWidth;
      if (w) observedWidth = w;
      if (w && w !== width) invalidate();
    });
    observer.observe(root);
  }

  draw(); // the first frame now, so the DOM is complete when render returns

  return () => {
    if (frame !== null) cancelFrame(frame);
    frame = null;
    unsubscribe();
    unsubscribeNodes();
    unsubscribeCells();
    if (disconnectCells) disconnectCells();
    for (const ev of traitEvents) model.off(ev, onTrait);
    for (const ev of textEvents) model.off(ev, onText);
    if (observer) observer.disconnect();
    controls.destroy();
    chart.destroy();
    nodesView.destroy();
    table.destroy();
    root.remove();
  };
}

/**
 * One line when samples sent from the kernel's sampler thread while this page was connected
 * never arrived and were asked for again (a front end that drops messages from background
 * threads: Colab), else "". Rows a page missed by connecting late or again are fetched quietly.
 */
export function missedNote(stats) {
  if (!stats.dropped) return "";
  const one = stats.filled === 1;
  const got = stats.filled
    ? `; ${stats.filled.toLocaleString("en-US")} ${one ? "was" : "were"} sent again after the cell, and ${one ? "is" : "are"} drawn`
    : "";
  return (
    "nbgpumon: samples sent while a cell ran did not arrive here (this front end drops what a " +
    `kernel's background thread sends)${got}: the chart moves only between cells`
  );
}
