// The uPlot panels: which panels exist for the current devices, columns and toggles
// (panelSpecs, pure), and the Chart that builds one uPlot per panel, feeds it downsampled rows,
// and draws cell bands (the running cell's an open one that grows), marks and the total-memory
// line in uPlot's draw hooks. The panels on screen share a frame's points budget (budget.js);
// those off screen are not drawn until they come back.
//
// Everything drawn from user strings goes through canvas fillText or textContent.

import { CellIndex } from "./cell-index.js";
import { cellEnd, cellId, cellKey } from "./cells.js";
import { formatBytes, formatBytesAxis, formatPercent, formatSeconds, ledgerLine, runningLine } from "./format.js";
import { bucketColumns } from "./budget.js";
import { Downsampler, bucketSeconds } from "./downsample.js";
import { kindColor, kindsOn } from "./kinds.js";
import { linePath } from "./line-path.js";
import { timeAxis } from "./time-axis.js";
import { cudaLabelOf, panelNameOf, unavailableOf } from "./devices.js";

export const PANEL_HEIGHT = 160; // CSS px, axes included

const TEXT_WIDTHS_KEPT = 1000; // label widths remembered (cells' names, totals)

// A node's rows come once per scrape interval (15 s by default): until a panel holds a few,
// its lines would be too short to see (one row draws none), so its points are drawn too.
const FEW_ROWS = 32;
const SPARSE_POINTS = { show: (u) => u.data[0].length <= FEW_ROWS, size: 5 };

// A line's colour is its metric's (the registry's `color`, sent with each column), so a metric
// is one colour in the chart, the report and the static picture; a metric without one takes
// this palette's colour for its place in the panel (the same rule as _views/chart/panels.py,
// the same cycle as LINE_CYCLE in _views/palette.py: tests/test_palette.py holds them equal).
export const PALETTE = ["#3b82f6", "#f59e0b", "#10b981", "#8b5cf6", "#06b6d4", "#ef4444", "#ec4899"];
/** The colour of column `c` (its registry metadata), the `k`th line of its panel. */
export function lineColor(c, k) {
  return typeof c.color === "string" && c.color ? c.color : PALETTE[k % PALETTE.length];
}

const UNIT = {
  bytes: { value: (v) => formatBytes(v), axis: formatBytesAxis },
  "bytes/s": { value: (v) => `${formatBytes(v)}/s`, axis: (v) => `${formatBytesAxis(v)}/s` },
  percent: { value: (v) => formatPercent(v), axis: (v) => `${v}%` },
  watts: { value: (v) => `${v.toFixed(0)} W`, axis: (v) => `${v} W` },
  celsius: { value: (v) => `${v.toFixed(0)} \u00b0C`, axis: (v) => `${v}\u00b0` },
};
// A unit the registry added later: three significant digits and its name.
const PLAIN = (suffix) => ({ value: (v) => `${Number(v.toPrecision(3))}${suffix}`, axis: (v) => `${v}${suffix}` });
const unitOf = (name) => UNIT[name] ?? PLAIN(name ? ` ${name}` : "");

// Panel titles; a panel the registry adds later is titled by its name.
const TITLE = { memory: "memory", util: "utilization", power: "power", temperature: "temperature" };
/** "GPU memory", "GPU 1 utilization (cuda:0)"; the host's RSS panel is "host memory".
 * `cudaLabel` is the kernel's name for the GPU as Python words it (`cuda:0`, or that the
 * kernel cannot see it), so the chart says what the text views say. */
function panelTitle(device, name, panel, cudaLabel = "") {
  if (device === null && panel === "rss") return "host memory";
  const title = `${device === null ? "host" : name} ${TITLE[panel] ?? panel}`;
  return cudaLabel ? `${title} (${cudaLabel})` : title;
}

// The group whose lines wait for a first value (a framework the notebook may never use).
const FRAMEWORK = "framework";

// Panels shown only when their toggle is on (the host's, only when there is a GPU).
export const OPTIONAL_PANELS = ["power", "temperature", "rss"];

// Binary steps for byte axes, so ticks land on 16 GiB, 32 GiB rather than 17.2 GB.
const BYTE_INCRS = (() => {
  const out = [];
  for (let k = 0; k <= 4; k++) {
    for (const m of [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]) out.push(m * 1024 ** k);
  }
  return [...new Set(out)].sort((a, b) => a - b);
})();

/**
 * The panels to show, built from the columns' registry metadata (the widget's `columns`): per
 * device, one panel per registry panel holding its charted series, both in registry order
 * (`order`); a `limit` metric (total memory) is the panel's ceiling. Then the host's.
 * A framework's allocator lines (group "framework") join their panel once `seen` says their
 * column has a value, so one framework's user does not see another's in the legend; a panel
 * whose lines are all unseen keeps them.
 * @param {{devices: object[], columns: object[], gpu: "all"|number, toggles: {power, temperature, rss}, seen?: (column: string) => boolean}} s
 *   columns: [{name, device, source, metric, group, unit, panel, label, chart, color, order}]
 * @returns {{id, title, unit, series: {label, column, color}[], totalColumn?, totalFallback?}[]}
 */
export function panelSpecs({ devices, columns, gpu, toggles, seen = () => true }) {
  const rank = (c) => (Number.isFinite(c.order) ? c.order : Infinity); // the registry's order
  const charted = columns
    .filter((c) => c && typeof c === "object" && c.chart && typeof c.panel === "string")
    .sort((a, b) => rank(a) - rank(b));
  const wanted = (panel, hasGpu) =>
    !OPTIONAL_PANELS.includes(panel) || (panel === "rss" ? toggles.rss || !hasGpu : toggles[panel]);
  const build = (device, prefix, name, fallback, cudaLabel = "", unavailable = []) => {
    const groups = new Map();
    // a metric NVML cannot give on this device (utilization on a MIG device) gets no line
    for (const c of charted.filter((m) => m.device === device && !unavailable.includes(m.metric))) {
      if (!wanted(c.panel, devices.length > 0)) continue;
      if (!groups.has(c.panel)) groups.set(c.panel, { series: [], total: null, unit: c.unit });
      const g = groups.get(c.panel);
      if (c.chart === "limit") g.total = c.name;
      else g.series.push(c);
    }
    const out = [];
    for (const [panel, g] of groups) {
      const shown = g.series.filter((c) => c.group !== FRAMEWORK || seen(c.name));
      if (shown.length) g.series = shown;
      if (!g.series.length) continue;
      out.push({
        id: `${prefix}-${panel}`,
        ...(device !== null && panel === "memory" ? { kindsOf: device } : {}),
        title: panelTitle(device, name, panel, cudaLabel),
        unit: g.series[0].unit,
        series: g.series.map((c, k) => ({
          label: String(c.label ?? c.name),
          column: c.name,
          color: lineColor(c, k),
        })),
        ...(g.total ? { totalColumn: g.total, totalFallback: fallback } : {}),
      });
    }
    return out;
  };
  const panels = [];
  for (const d of devices.filter((d) => gpu === "all" || d.index === gpu)) {
    const name = panelNameOf(d, devices.length > 1);
    panels.push(...build(d.index, `gpu${d.index}`, name, d.memory_total, cudaLabelOf(d), unavailableOf(d)));
  }
  panels.push(...build(null, "host", "host"));
  return panels;
}

function yRange(unit, panel) {
  if (unit === "percent") return () => [0, 100];
  if (unit === "celsius") {
    return (u, min, max) =>
      Number.isFinite(min) && Number.isFinite(max) ? [Math.floor(min - 3), Math.ceil(max + 3)] : [0, 100];
  }
  return (u, min, max) => {
    let hi = Number.isFinite(max) ? max : 0;
    if (panel.total != null && panel.total > hi) hi = panel.total;
    return [0, hi > 0 ? hi * 1.05 : 1];
  };
}

function lastValue(values) {
  if (!values) return null;
  for (let i = values.length - 1; i >= 0; i--) if (values[i] != null) return values[i];
  return null;
}

function clock(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString();
}

/**
 * A band's tip: the kernel's summary line of the cell (who holds what it kept included), or the
 * running cell's so far; then its source. A row without a summary (an older kernel's) gets one
 * made here, with the holders on a line of their own.
 */
function tipText(cell, kinds = false) {
  const label = typeof cell.label === "string" ? cell.label : "";
  const byKind = kinds && typeof cell.kinds_text === "string" ? cell.kinds_text : "";
  if (!cell.running && typeof cell.summary === "string" && cell.summary) {
    return [cell.summary, byKind && `peak by kind: ${byKind}`, label].filter(Boolean).join("\n");
  }
  const held = typeof cell.held_by === "string" && cell.held_by ? `held by ${cell.held_by}` : "";
  const line = cell.running ? runningLine(cell) : ledgerLine(cell);
  return [line, held, byKind && `peak by kind: ${byKind}`, label].filter(Boolean).join("\n");
}

/**
 * Unix seconds to canvas px on `u`'s x scale (linear, left to right): what
 * u.valToPos(t, "x", true) gives, without a call into uPlot for each of 10,000 bands.
 * @returns {((t: number) => number) & {perSecond: number}}
 */
function canvasX(u) {
  const { min, max } = u.scales.x;
  const { left, width } = u.bbox;
  const perSecond = max > min ? width / (max - min) : 0;
  const toX = (t) => left + (t - min) * perSecond;
  toX.perSecond = perSecond;
  return toX;
}

function cssVar(el, name, fallback) {
  try {
    const v = getComputedStyle(el).getPropertyValue(name).trim();
    return v || fallback;
  } catch {
    return fallback;
  }
}

export class Chart {
  /**
   * @param {object} o
   * @param {HTMLElement} o.container where the panels go
   * @param {Function} o.UPlot the uPlot constructor (injected so tests can pass a stub)
   * @param {(key: string|null) => void} o.onSelect a band was clicked (its cellKey, or null)
   * @param {(seriesKey: string, show: boolean) => void} o.onSeriesToggle a legend entry was clicked
   * @param {string} o.syncKey cursor sync group (one per view)
   * @param {() => void} [o.onVisible] a panel that missed updates scrolled into view
   * @param {Function} [o.IntersectionObserver] injected for tests; the browser's by default
   */
  constructor({ container, UPlot, onSelect, onSeriesToggle, syncKey, onVisible, IntersectionObserver }) {
    this.container = container;
    this.UPlot = UPlot;
    this.onSelect = onSelect;
    this.onSeriesToggle = onSeriesToggle;
    this.syncKey = syncKey;
    this.panels = [];
    // Panels scrolled out of view are not redrawn (8 GPUs make 16 panels, a few screens tall):
    // they are marked stale and drawn when they come back. The panels on screen share the
    // points budget, so when fewer are on screen the rest are drawn again, finer.
    const Observer = IntersectionObserver ?? globalThis.IntersectionObserver;
    this.observer =
      typeof Observer === "function"
        ? new Observer((entries) => {
            let wake = false;
            for (const e of entries) {
              const panel = this.panels.find((p) => p.el === e.target);
              if (!panel) continue;
              panel.visible = e.isIntersecting;
              if (panel.visible && panel.stale) wake = true;
            }
            if (this.span !== null && bucketSeconds(this.span, this.columns()) !== this.dt) wake = true;
            if (wake && onVisible) onVisible();
          })
        : null;
    this.layout = null;
    this.width = 0;
    this.hidden = new Set();
    this.span = null; // seconds drawn by the last update, and its bucket width (downsample.js)
    this.dt = NaN;
    this.frame = { index: new CellIndex([]), running: null, marks: [], highlight: null, now: NaN };
    this.visible = { min: NaN, max: NaN, frame: null, cells: [] }; // the last band query's
    this.cellArray = null; // cells given as an array (tests), and the index made of them
    this.cellArrayIndex = null;
    this.downsampler = new Downsampler();
    this.textWidths = new Map(); // `${font}|${text}` -> px: each panel measures the same labels each frame
  }

  pxRatio() {
    return this.UPlot.pxRatio || globalThis.devicePixelRatio || 1;
  }

  /** The lines (series not switched off) of the panels on screen. */
  linesOnScreen() {
    let lines = 0;
    for (const p of this.panels) {
      if (!p.visible) continue;
      for (const s of p.spec.series) if (!this.hidden.has(`${p.spec.id}:${s.column}`)) lines += 1;
    }
    return lines;
  }

  /** The pixel columns a frame downsamples to: the budget shared by the lines on screen. */
  columns() {
    return bucketColumns(this.width, this.linesOnScreen());
  }

  /**
   * Draw the current state.
   * @param {object} f
   * @param {import("./store.js").Store} f.store
   * @param {object[]} f.specs from panelSpecs (or nodes.js's nodePanelSpecs, whose
   *   `totalColumns` are several ceilings, of which the largest is drawn)
   * @param {number|null} f.window seconds shown, or null for all
   * @param {number} f.width CSS px
   * @param {CellIndex|object[]} f.cells the ledger's entries: cell-store's index of them (or
   *   an array of valid entries, indexed here)
   * @param {object|null} [f.running] the running cell (cells.runningCell), drawn open to now
   * @param {object[]} f.marks
   * @param {string|null} f.highlight cellKey of the selected cell
   * @param {Set<string>} f.hidden series keys the user switched off
   * @param {boolean} [f.kinds] stack each cell's memory by kind in its band (GPU memory panels)
   */
  update({ store, specs, window, width, cells, running = null, marks, highlight, hidden, kinds = false }) {
    const layout = specs.map((s) => `${s.id}:${s.series.map((x) => x.column).join(",")}`).join("|");
    if (layout !== this.layout) this._rebuild(specs, width, hidden);
    else if (width !== this.width) {
      for (const p of this.panels) p.u.setSize({ width, height: PANEL_HEIGHT });
    }
    this.layout = layout;
    this.width = width;
    this.hidden = hidden;

    const t1 = store.lastTime;
    const now = t1;
    this.frame = { index: this._indexOf(cells), running, marks, highlight, now, kinds };
    // The window is a maximum: until that much is held the chart spans what there is.
    let t0 = window ? Math.max(t1 - window, store.firstTime) : store.firstTime;
    if (!(t1 > t0)) t0 = t1 - 1;

    const names = [...new Set(specs.flatMap((s) => s.series.map((x) => x.column)))];
    const index = names.map((n) => store.columnIndex.get(n) ?? -1);
    const columns = this.columns();
    const { x, ys } = this.downsampler.run(store, index, t0, columns);
    this.span = Math.max(t1 - t0, 0);
    this.dt = bucketSeconds(this.span, columns);
    const byName = new Map(names.map((n, i) => [n, ys[i]]));

    for (const p of this.panels) {
      if (!p.visible) {
        p.stale = true;
        continue;
      }
      p.stale = false;
      p.range = Number.isFinite(t1) ? [t0, t1] : [0, 1];
      if (p.spec.totalColumn || p.spec.totalColumns) {
        // several (a node's GPUs): the largest is the panel's ceiling
        const totals = (p.spec.totalColumns ?? [p.spec.totalColumn]).map((n) => store.latest(n));
        const known = totals.filter((v) => v !== null && Number.isFinite(v));
        const total = known.length ? Math.max(...known) : null;
        p.total = total ?? (Number.isFinite(p.spec.totalFallback) ? p.spec.totalFallback : null);
      }
      p.u.setData([x, ...p.spec.series.map((s) => byName.get(s.column))], true);
      if (p.hovered && p.hovered.running) this._refreshHovered(p);
    }
    return x.length;
  }

  _rebuild(specs, width, hidden) {
    this._destroyPanels();
    // Canvas colours cannot be CSS variables: read the theme's once per layout.
    this.colors = {
      axis: cssVar(this.container, "--jp-ui-font-color2", "#888"),
      text: cssVar(this.container, "--jp-ui-font-color1", "#888"),
      background: cssVar(this.container, "--jp-layout-color0", "rgba(128,128,128,0.2)"),
    };
    for (const spec of specs) this.panels.push(this._panel(spec, width, hidden));
  }

  _panel(spec, width, hidden) {
    const el = document.createElement("div");
    el.className = "nbgpumon-panel";
    el.dataset.panel = spec.id;
    const head = document.createElement("div");
    head.className = "nbgpumon-panel-head";
    const title = document.createElement("span");
    title.className = "nbgpumon-panel-title";
    title.textContent = spec.title;
    head.append(title);
    const plot = document.createElement("div");
    plot.className = "nbgpumon-plot";
    const tip = document.createElement("div");
    tip.className = "nbgpumon-tip";
    tip.hidden = true;
    el.append(head, plot, tip);
    this.container.append(el);

    // Visible until the observer says otherwise, so the first frame draws everything.
    const panel = { spec, el, tip, range: [0, 1], total: null, hovered: null, u: null, visible: true, stale: false };
    if (this.observer) this.observer.observe(el);
    const unit = unitOf(spec.unit);
    const fg = this.colors.axis;
    const grid = "rgba(128,128,128,0.18)";
    const axis = (extra) => ({
      stroke: fg,
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid, width: 1, size: 4 },
      font: "10px sans-serif",
      ...extra,
    });
    const opts = {
      width,
      height: PANEL_HEIGHT,
      // The legend sits in the panel's header row: one line instead of one under each plot.
      legend: { show: true, live: true, mount: (u, table) => head.append(table) },
      cursor: {
        drag: { x: false, y: false, setScale: false },
        sync: { key: this.syncKey },
        points: { size: 5 },
      },
      scales: {
        x: { time: true, range: () => panel.range },
        y: { range: yRange(spec.unit, panel) },
      },
      axes: [
        axis(timeAxis()),
        axis({
          size: 58,
          values: (u, splits) => splits.map(unit.axis),
          ...(spec.unit === "bytes" ? { incrs: BYTE_INCRS } : {}),
        }),
      ],
      series: [
        { label: "time", value: (u, v) => (v == null ? "latest" : clock(v)) },
        ...spec.series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 1.25,
          paths: linePath,
          show: !hidden.has(`${spec.id}:${s.column}`),
          // Not hovering (idx null): the newest value, so the legend reads as a live readout.
          value: (u, v, si, idx) => {
            const x = idx == null ? lastValue(u.data[si]) : v;
            return x == null ? "\u2014" : unit.value(x);
          },
          points: spec.sparse ? SPARSE_POINTS : { show: false },
        })),
      ],
      hooks: {
        drawClear: [(u) => this._drawBands(u, panel)],
        draw: [(u) => this._drawOverlays(u, panel)],
        setCursor: [(u) => this._hover(u, panel)],
        setSeries: [
          (u, i, o) => {
            if (i > 0 && o && typeof o.show === "boolean") {
              this.onSeriesToggle(`${spec.id}:${spec.series[i - 1].column}`, o.show);
            }
          },
        ],
      },
    };
    const empty = [[], ...spec.series.map(() => [])];
    panel.u = new this.UPlot(opts, empty, plot);
    panel.onClick = () => this.onSelect(panel.hovered ? cellKey(panel.hovered) : null);
    panel.onLeave = () => this._showTip(panel, null);
    if (panel.u.over) {
      panel.u.over.addEventListener("click", panel.onClick);
      panel.u.over.addEventListener("mouseleave", panel.onLeave);
    }
    return panel;
  }

  /** ctx.measureText(text).width in the context's font, measured once per font and text. */
  _textWidth(ctx, text) {
    const key = `${ctx.font}|${text}`;
    let w = this.textWidths.get(key);
    if (w === undefined) {
      if (this.textWidths.size >= TEXT_WIDTHS_KEPT) this.textWidths.clear();
      w = ctx.measureText(text).width;
      this.textWidths.set(key, w);
    }
    return w;
  }

  _indexOf(cells) {
    if (cells instanceof CellIndex) return cells;
    if (cells !== this.cellArray) {
      this.cellArray = cells;
      this.cellArrayIndex = new CellIndex(cells);
    }
    return this.cellArrayIndex;
  }

  /** The entries overlapping the panel's x range, by start, the running cell last; every
   * panel of a frame shares one range, so its bands and labels share one query. */
  _visibleCells(u) {
    const { min, max } = u.scales.x;
    const v = this.visible;
    if (v.frame === this.frame && v.min === min && v.max === max) return v.cells;
    const { index, running, now } = this.frame;
    const cells = index.overlapping(min, max);
    if (running && running.start <= max && cellEnd(running, now) >= min) cells.push(running);
    this.visible = { min, max, frame: this.frame, cells };
    return cells;
  }

  /** The entry under time `t`: the innermost (latest start), the running cell included. */
  _cellAt(t) {
    const { index, running, now } = this.frame;
    const found = index.at(t);
    const inRunning = running && running.start <= t && t <= cellEnd(running, now);
    return inRunning && (!found || running.start >= found.start) ? running : found;
  }

  _drawBands(u, panel) {
    const { ctx, bbox } = u;
    const { highlight, now } = this.frame;
    const pr = this.pxRatio();
    ctx.save();
    ctx.beginPath();
    ctx.rect(bbox.left, bbox.top, bbox.width, bbox.height);
    ctx.clip();
    // Bands of one colour that follow one another within a pixel are one rectangle: with
    // 10,000 cells over the window many share each pixel column, and a fill each would be
    // 10,000 fills a panel. A band inside another (a region in its cell) is drawn over it.
    let run = null; // { x0, x1, style } not yet filled
    const flush = () => {
      if (run) ctx.fillRect(run.x0, bbox.top, run.x1 - run.x0, bbox.height);
      run = null;
    };
    const toX = canvasX(u);
    const highlightStart = highlight === null ? NaN : Number(highlight.slice(highlight.indexOf("@") + 1));
    const hoveredStart = panel.hovered === null ? NaN : panel.hovered.start;
    const hoveredKey = panel.hovered === null ? null : cellKey(panel.hovered);
    for (const c of this._visibleCells(u)) {
      const x0 = Math.max(bbox.left, toX(c.start));
      const x1 = Math.min(bbox.left + bbox.width, toX(cellEnd(c, now)));
      const w = Math.max(pr, x1 - x0);
      // by start first: a key is a string to build, 10,000 times a panel
      const selected = c.start === highlightStart && cellKey(c) === highlight;
      const bad = c.status && c.status !== "ok" && !c.running;
      const hovered = c.start === hoveredStart && cellKey(c) === hoveredKey;
      const style = selected
        ? "rgba(245,158,11,0.30)"
        : bad
          ? "rgba(239,68,68,0.14)"
          : c.running
            ? hovered
              ? "rgba(59,130,246,0.24)"
              : "rgba(59,130,246,0.13)"
            : hovered
              ? "rgba(128,128,128,0.20)"
              : "rgba(128,128,128,0.10)";
      const edged = selected || c.running;
      if (run && !edged && style === run.style && x0 >= run.x1 - pr && x0 <= run.x1 + pr) {
        run.x1 = Math.max(run.x1, x0 + w);
        continue;
      }
      flush();
      ctx.fillStyle = style;
      if (!edged) {
        run = { x0, x1: x0 + w, style };
        continue;
      }
      ctx.fillRect(x0, bbox.top, w, bbox.height);
      // a running band is open: an edge where it began, none where it ends (it has not)
      ctx.fillStyle = selected ? "rgba(245,158,11,0.9)" : "rgba(59,130,246,0.7)";
      ctx.fillRect(x0, bbox.top, pr, bbox.height);
      if (!c.running) ctx.fillRect(x0 + w - pr, bbox.top, pr, bbox.height);
    }
    flush();
    const drawn = this.frame.kinds && Number.isInteger(panel.spec.kindsOf) ? this._drawKinds(u, panel.spec.kindsOf, toX) : 0;
    if (panel.el.dataset.kindsDrawn !== String(drawn)) panel.el.dataset.kindsDrawn = String(drawn);
    ctx.restore();
  }

  /** Each cell's memory on GPU `device` by kind (its end's, then what its peak held beyond),
   * stacked from 0 in its band, under the lines; how many cells it drew (for tests). */
  _drawKinds(u, device, toX) {
    const { ctx, bbox } = u;
    const { now } = this.frame;
    const pr = this.pxRatio();
    ctx.globalAlpha = 0.45;
    let drawn = 0;
    for (const c of this._visibleCells(u)) {
      const parts = kindsOn(c, device);
      if (!parts.length) continue;
      drawn += 1;
      const x0 = Math.max(bbox.left, toX(c.start));
      const x1 = Math.min(bbox.left + bbox.width, toX(cellEnd(c, now)));
      const w = Math.max(pr, x1 - x0);
      let base = 0;
      for (const [kind, bytes] of parts) {
        const y0 = u.valToPos(base, "y", true);
        const y1 = u.valToPos(base + bytes, "y", true);
        ctx.fillStyle = kindColor(kind);
        ctx.fillRect(x0, Math.min(y0, y1), w, Math.max(Math.abs(y0 - y1), bytes > 0 ? pr : 0));
        base += bytes;
      }
    }
    ctx.globalAlpha = 1;
    return drawn;
  }

  _drawOverlays(u, panel) {
    const { ctx, bbox } = u;
    const { marks, now } = this.frame;
    const pr = this.pxRatio();
    const fg = this.colors.text;
    ctx.save();
    ctx.beginPath();
    ctx.rect(bbox.left, bbox.top, bbox.width, bbox.height);
    ctx.clip();
    ctx.font = `${Math.round(10 * pr)}px sans-serif`;
    ctx.textAlign = "left"; // uPlot leaves its axis alignment in the context
    ctx.textBaseline = "top";

    // Cell labels "[N]" at the top of each band wide enough to hold one; the running cell's
    // with its time so far ("[N] 12.3 s") when that fits.
    ctx.fillStyle = fg;
    ctx.globalAlpha = 0.75;
    const toX = canvasX(u);
    // no label fits a band narrower than "[0]": most of 10,000 over the window, not measured
    const shortest = (this._textWidth(ctx, "[0]") + 4 * pr) / toX.perSecond;
    for (const c of this._visibleCells(u)) {
      const end = cellEnd(c, now);
      if (end - c.start < shortest) continue;
      const name = String(c.name ?? "");
      const x0 = Math.max(bbox.left, toX(c.start));
      const x1 = Math.min(bbox.left + bbox.width, toX(end));
      const labels = c.running ? [`${name} ${formatSeconds(c.duration)}`, name] : [name];
      const label = labels.find((l) => name && x1 - x0 >= this._textWidth(ctx, l) + 4 * pr);
      if (label) ctx.fillText(label, x0 + 2 * pr, bbox.top + 2 * pr);
    }

    // Total memory: a dashed horizontal line.
    ctx.globalAlpha = 0.8;
    ctx.lineWidth = pr;
    if (panel.total != null && Number.isFinite(panel.total)) {
      const y = Math.round(u.valToPos(panel.total, "y", true)) + 0.5;
      ctx.strokeStyle = fg;
      ctx.setLineDash([4 * pr, 3 * pr]);
      ctx.beginPath();
      ctx.moveTo(bbox.left, y);
      ctx.lineTo(bbox.left + bbox.width, y);
      ctx.stroke();
      const text = `total ${formatBytes(panel.total)}`;
      // Above the line when there is room, else just under it.
      const above = y - bbox.top > 14 * pr;
      const right = bbox.left + bbox.width - 3 * pr;
      const ty = above ? y - 2 * pr : y + 2 * pr;
      const tw = this._textWidth(ctx, text);
      // On a backing box: cell labels and lines may run under it.
      ctx.globalAlpha = 0.85;
      ctx.fillStyle = this.colors.background;
      ctx.fillRect(right - tw - 2 * pr, above ? ty - 12 * pr : ty - pr, tw + 4 * pr, 13 * pr);
      ctx.globalAlpha = 0.9;
      ctx.fillStyle = fg;
      ctx.textAlign = "right";
      ctx.textBaseline = above ? "bottom" : "top";
      ctx.fillText(text, right, ty);
      ctx.textAlign = "left";
      ctx.textBaseline = "top";
    }

    // Marks: vertical dashed lines with their labels.
    const { min, max } = u.scales.x;
    ctx.setLineDash([2 * pr, 2 * pr]);
    ctx.strokeStyle = "#f59e0b";
    for (const m of marks) {
      if (!(m.time >= min && m.time <= max)) continue;
      const x = Math.round(u.valToPos(m.time, "x", true)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, bbox.top);
      ctx.lineTo(x, bbox.top + bbox.height);
      ctx.stroke();
      const label = String(m.label ?? "").slice(0, 60);
      if (label) {
        ctx.fillStyle = fg;
        ctx.fillText(label, x + 3 * pr, bbox.top + 14 * pr);
      }
    }
    ctx.restore();
  }

  _hover(u, panel) {
    const left = u.cursor.left;
    if (left == null || left < 0 || !u.scales.x || u.scales.x.min == null) {
      this._showTip(panel, null);
      return;
    }
    const t = u.posToVal(left, "x");
    const cell = this._cellAt(t);
    // Panels that follow the cursor through uPlot's sync get a null event: they shade the
    // band but only the panel under the mouse shows the tip.
    this._showTip(panel, cell, left, u.cursor.event !== null);
  }

  /** The running cell under a resting mouse, a frame later: its time so far, or its ledger
   * row once it ended (the same key). */
  _refreshHovered(panel) {
    const key = cellKey(panel.hovered);
    const { running, index } = this.frame;
    const fresh =
      running && cellKey(running) === key
        ? running
        : (index.overlapping(panel.hovered.start, panel.hovered.start).find((c) => cellKey(c) === key) ?? null);
    panel.hovered = fresh;
    if (panel.tip.hidden) return;
    if (fresh) panel.tip.textContent = tipText(fresh, this.frame.kinds);
    else panel.tip.hidden = true;
  }

  _showTip(panel, cell, left = 0, withText = true) {
    const changed = panel.hovered !== cell;
    panel.hovered = cell;
    const tip = panel.tip;
    if (!cell || !withText) {
      tip.hidden = true;
      delete tip.dataset.tipCell;
    } else {
      tip.textContent = tipText(cell, this.frame.kinds);
      tip.dataset.tipCell = cellId(cell);
      tip.hidden = false;
      // Left of the cursor when the cursor is in the right half, so the tip stays inside.
      const plotLeft = panel.u.bbox ? panel.u.bbox.left / this.pxRatio() : 0;
      const x = plotLeft + left;
      if (left > this.width / 2) {
        tip.style.left = "";
        tip.style.right = `${Math.max(0, this.width - x + 10)}px`;
      } else {
        tip.style.right = "";
        tip.style.left = `${x + 10}px`;
      }
    }
    if (changed && panel.u && panel.u.redraw) panel.u.redraw(false, false);
  }

  _destroyPanels() {
    for (const p of this.panels) {
      if (this.observer) this.observer.unobserve(p.el);
      if (p.u.over) {
        p.u.over.removeEventListener("click", p.onClick);
        p.u.over.removeEventListener("mouseleave", p.onLeave);
      }
      p.u.destroy();
      p.el.remove();
    }
    this.panels = [];
    this.layout = null;
  }

  /** Remove every panel (the next update builds them again). */
  clear() {
    this._destroyPanels();
  }

  destroy() {
    this._destroyPanels();
    if (this.observer) this.observer.disconnect();
  }
}
