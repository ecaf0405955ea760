// One view of the widget: builds the DOM (status line, controls, chart, table) under `el`,
// draws on animation frames when the store or the view state changed, and returns the cleanup
// that undoes all of it. Views hold no timeline data; the model's store does.

import { runningCell, validCells } from "./cells.js";
import { Chart, panelSpecs } from "./chart.js";
import { Controls } from "./controls.js";
import { formatSpan } from "./format.js";
import { storeFor } from "./store.js";
import { styleElement } from "./style.js";
import { CellTable } from "./table.js";

const DEFAULT_WIDTH = 640; // CSS px, until the element is laid out
const VIEW_TRAITS = ["cells", "running", "marks", "status", "devices"];
let views = 0;

function validDevices(value) {
  if (!Array.isArray(value)) return [];
  return value.filter((d) => d && typeof d === "object" && Number.isInteger(d.index));
}

function validMarks(value) {
  if (!Array.isArray(value)) return [];
  return value.filter((m) => m && typeof m === "object" && Number.isFinite(m.time));
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
 *   ResizeObserver / IntersectionObserver (defaults: the browser's)
 * @returns {() => void} cleanup
 */
export function createView({ model, el }, deps) {
  const UPlot = deps.UPlot;
  const requestFrame =
    deps.requestFrame ?? globalThis.requestAnimationFrame?.bind(globalThis) ?? ((fn) => setTimeout(fn, 16));
  const cancelFrame =
    deps.cancelFrame ?? globalThis.cancelAnimationFrame?.bind(globalThis) ?? ((id) => clearTimeout(id));
  const Observer = deps.ResizeObserver ?? globalThis.ResizeObserver;

  const store = storeFor(model);
  const state = {
    window: 600, // seconds, or null for all
    gpu: null, // nvml index, "all", or null: the first GPU
    toggles: { power: false, temperature: false, rss: false },
    highlight: null, // cellKey of the selected cell
    hidden: new Set(), // series switched off in a legend, by "panelId:column"
  };

  const root = document.createElement("div");
  root.className = "nbgpumon-widget";
  root.dataset.points = "0";
  const status = document.createElement("div");
  status.className = "nbgpumon-status";
  const chartEl = document.createElement("div");
  chartEl.className = "nbgpumon-chart";
  const empty = document.createElement("div");
  empty.className = "nbgpumon-empty";
  empty.textContent = "no timeline yet";
  empty.hidden = true;

  let frame = null;
  let dirty = true;
  let drawnRevision = -1;
  let width = 0;
  let cellsRaw;
  let cells = [];

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
  const table = new CellTable({ onSelect: select });

  root.append(styleElement(), status, controls.el, chartEl, empty, table.el);
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
    if (!dirty && store.revision === drawnRevision) return;
    dirty = false;
    drawnRevision = store.revision;

    const devices = validDevices(model.get("devices"));
    const raw = model.get("cells");
    if (raw !== cellsRaw) {
      cellsRaw = raw;
      cells = validCells(raw);
    }
    const running = runningCell(model.get("running"), cells, store.lastTime, (name) => store.latest(name));
    const marks = validMarks(model.get("marks"));
    const text = model.get("status");
    status.textContent = typeof text === "string" ? text : "";

    let gpu = state.gpu ?? (devices.length ? devices[0].index : "all");
    if (gpu !== "all" && !devices.some((d) => d.index === gpu)) gpu = devices.length ? devices[0].index : "all";
    const columns = store.columnInfo;
    controls.update({ devices, columns, state: { ...state, gpu }, shown: shownNote(store, state.window) });

    const specs = panelSpecs({ devices, columns, gpu, toggles: state.toggles, seen });
    width = root.clientWidth || el.clientWidth || width || DEFAULT_WIDTH;
    chart.update({
      store,
      specs,
      window: state.window,
      width,
      cells,
      running,
      marks,
      highlight: state.highlight,
      hidden: state.hidden,
    });
    empty.hidden = specs.length > 0;
    table.update(cells, state.highlight, running);
    root.dataset.points = String(store.size);
  }

  const unsubscribe = store.subscribe(schedule);
  const onTrait = () => invalidate();
  const traitEvents = VIEW_TRAITS.map((name) => `change:${name}`);
  for (const ev of traitEvents) model.on(ev, onTrait);

  let observer = null;
  if (typeof Observer === "function") {
    observer = new Observer(() => {
      const w = root.clientWidth;
      if (w && w !== width) invalidate();
    });
    observer.observe(root);
  }

  draw(); // the first frame now, so the DOM is complete when render returns

  return () => {
    if (frame !== null) cancelFrame(frame);
    frame = null;
    unsubscribe();
    for (const ev of traitEvents) model.off(ev, onTrait);
    if (observer) observer.disconnect();
    controls.destroy();
    chart.destroy();
    table.destroy();
    root.remove();
  };
}
