// The cluster view under the controls when the host selector names other nodes: "all nodes"
// (panels for the first MAX_NODE_PANELS hosts, a summary row for each of the rest; clicking a
// row shows that host) or one host (a list of its GPUs, and its panels). At most
// MAX_NODE_PANELS hosts' panels exist at once, however many nodes answer.
//
// Host names, models, pods and namespaces are user data: inserted with textContent only.

import { Chart } from "./chart.js";
import { DASH, formatBytes, formatPercent, formatSpan } from "./format.js";
import { gpuRows, hostsOf, nodePanelSpecs, nodeSummary, nodesLayout } from "./nodes.js";

const SUMMARY = [
  { title: "host", cls: "host" },
  { title: "GPUs", cls: "num" },
  { title: "memory used / total", cls: "num" },
  { title: "util mean", cls: "num" },
  { title: "util max", cls: "num" },
  { title: "last answer", cls: "num" },
];
const GPUS = [
  { title: "GPU", cls: "gpu" },
  { title: "model", cls: "model" },
  { title: "memory used / total", cls: "num" },
  { title: "util", cls: "num" },
  { title: "pod", cls: "pod" },
];

function usedOfTotal(used, total) {
  return used === null && total === null ? DASH : `${formatBytes(used ?? NaN)} / ${formatBytes(total ?? NaN)}`;
}

/** The texts of a summary row, in SUMMARY order. */
export function summaryTexts(s) {
  return [
    s.host,
    s.gpus,
    usedOfTotal(s.used, s.total),
    formatPercent(s.utilMean ?? NaN),
    formatPercent(s.utilMax ?? NaN),
    s.age === null ? DASH : `${formatSpan(s.age)} ago`,
  ];
}

/** The texts of a GPU list row, in GPUS order. */
export function gpuTexts(g) {
  return [g.label, g.model || DASH, usedOfTotal(g.used, g.total), formatPercent(g.util ?? NaN), g.pod || DASH];
}

/** A <table> with a header row of `columns`, and its body. */
function table(className, columns) {
  const el = document.createElement("table");
  el.className = `nbgpumon-node-table ${className}`;
  const head = el.createTHead().insertRow();
  for (const c of columns) {
    const th = document.createElement("th");
    th.className = c.cls;
    th.textContent = c.title;
    head.append(th);
  }
  return { el, body: el.createTBody() };
}

/** Keep `body`'s rows those of `keys` (in order), each row's cells showing `texts(key)`. */
function fillRows(body, rows, keys, columns, texts, mark) {
  const wanted = new Set(keys);
  for (const [key, tr] of rows) {
    if (!wanted.has(key)) {
      tr.remove();
      rows.delete(key);
    }
  }
  keys.forEach((key, i) => {
    let tr = rows.get(key);
    if (!tr) {
      tr = document.createElement("tr");
      mark(tr, key);
      for (const c of columns) {
        const td = document.createElement("td");
        td.className = c.cls;
        tr.append(td);
      }
      rows.set(key, tr);
    }
    texts(key).forEach((t, j) => {
      if (tr.children[j].textContent !== t) tr.children[j].textContent = t;
    });
    if (body.children[i] !== tr) body.insertBefore(tr, body.children[i] ?? null);
  });
}

export class NodesView {
  /**
   * @param {object} o
   * @param {Function} o.UPlot the uPlot constructor
   * @param {string} o.syncKey cursor sync group (the view's)
   * @param {(host: string) => void} o.onHost a summary row was clicked
   * @param {(key: string|null) => void} o.onSelect a cell band was clicked
   * @param {(seriesKey: string, show: boolean) => void} o.onSeriesToggle
   * @param {() => void} [o.onVisible] a panel that missed updates scrolled into view
   * @param {Function} [o.IntersectionObserver]
   */
  constructor({ UPlot, syncKey, onHost, onSelect, onSeriesToggle, onVisible, IntersectionObserver }) {
    this.el = document.createElement("div");
    this.el.className = "nbgpumon-nodes";
    this.status = document.createElement("div");
    this.status.className = "nbgpumon-cluster-status";

    this.summary = document.createElement("div");
    this.summary.className = "nbgpumon-node-summary";
    this.summaryNote = document.createElement("div");
    this.summaryNote.className = "nbgpumon-node-note";
    const summary = table("nbgpumon-summary", SUMMARY);
    this.summaryBody = summary.body;
    this.summaryRows = new Map(); // host -> <tr>
    const wrap = document.createElement("div");
    wrap.className = "nbgpumon-table-wrap";
    wrap.append(summary.el);
    this.summary.append(this.summaryNote, wrap);
    this.onClick = (event) => {
      const tr = event.target && event.target.closest ? event.target.closest("tr[data-host]") : null;
      if (tr && this.summaryBody.contains(tr)) onHost(tr.dataset.host);
    };
    summary.el.addEventListener("click", this.onClick);
    this.summaryTable = summary.el;

    this.chartEl = document.createElement("div");
    this.chartEl.className = "nbgpumon-node-chart";
    this.empty = document.createElement("div");
    this.empty.className = "nbgpumon-empty";
    this.empty.hidden = true;

    this.gpus = document.createElement("div");
    this.gpus.className = "nbgpumon-node-gpus";
    const gpus = table("nbgpumon-gpus", GPUS);
    this.gpuBody = gpus.body;
    this.gpuRows = new Map(); // gpu -> <tr>
    this.gpus.append(gpus.el);

    // the tables first: one line a host or GPU, where the panels are a screen or more tall
    this.el.append(this.status, this.summary, this.gpus, this.chartEl, this.empty);
    this.chart = new Chart({ container: this.chartEl, UPlot, onSelect, onSeriesToggle, syncKey, onVisible, IntersectionObserver });
    this.drawn = false; // panels exist
  }

  /**
   * Show one host's panels and GPUs (`host`), or, with `host` null, all nodes.
   * @param {object} f
   * @param {import("./node-store.js").NodeStore} f.store
   * @param {object[]} f.nodes validNodes of the `nodes` trait
   * @param {object[]} f.columns validNodeColumns of the store's columns
   * @param {string} f.status the `cluster_status` line
   * @param {number} f.now unix seconds, for the age of each host's last answer
   * @param {boolean} [f.panels] false: the panels' rows and state are as last drawn (only the
   *   tables' texts, the ages among them, are refreshed)
   * The rest as Chart.update takes them: window, width, cells, running, marks, highlight, hidden.
   */
  update({ store, nodes, columns, host, status, now, panels = true, ...frame }) {
    if (this.status.textContent !== status) this.status.textContent = status;
    this.status.hidden = !status;
    const hosts = hostsOf(nodes, columns);
    const byHost = new Map(nodes.map((n) => [n.host, n]));
    const latest = (name) => store.latest(name);
    const all = host === null;
    const shown = all ? nodesLayout(hosts) : { panels: [host], summary: [] };

    const summaries = new Map(shown.summary.map((h) => [h, nodeSummary(h, byHost.get(h), columns, latest, now)]));
    this.summary.hidden = !summaries.size;
    const more = hosts.length - shown.panels.length;
    const note = `${more} more node${more === 1 ? "" : "s"}, without panels (click one to show it)`;
    if (this.summaryNote.textContent !== note) this.summaryNote.textContent = note;
    fillRows(this.summaryBody, this.summaryRows, shown.summary, SUMMARY, (h) => summaryTexts(summaries.get(h)), (tr, h) => {
      tr.dataset.host = h;
    });

    const rows = all ? [] : gpuRows(host, byHost.get(host), columns, latest);
    this.gpus.hidden = !rows.length;
    const byGpu = new Map(rows.map((g) => [g.gpu, g]));
    fillRows(this.gpuBody, this.gpuRows, rows.map((g) => g.gpu), GPUS, (g) => gpuTexts(byGpu.get(g)), (tr, g) => {
      tr.dataset.gpu = g;
    });

    if (!panels && this.drawn) return;
    const specs = shown.panels.flatMap((h) => nodePanelSpecs(columns, h));
    this.empty.hidden = specs.length > 0;
    if (!specs.length) this.empty.textContent = all ? "no node has answered yet" : "no samples from this host yet";
    if (specs.length || this.drawn) this.chart.update({ store, specs, ...frame });
    this.drawn = specs.length > 0;
  }

  /** Drop the panels (the view shows this kernel's again): none kept while not shown. */
  clear() {
    if (!this.drawn) return;
    this.chart.clear();
    this.drawn = false;
  }

  destroy() {
    this.summaryTable.removeEventListener("click", this.onClick);
    this.chart.destroy();
    this.el.remove();
  }
}
