// The row of controls above the chart: time window (with a note of how much data there is while
// that is less), host selector (only once other nodes answered: this kernel, all nodes, or one
// host), GPU selector (only with more than one GPU), toggles for the optional panels and for
// each cell's memory by kind in the memory panels (with its legend). The
// last two are this kernel's, hidden while other nodes are shown. They change view state only;
// nothing goes to the kernel.
import { cudaLabelOf } from "./devices.js";
import { KIND_COLORS, OTHER_COLOR, kindGroup } from "./kinds.js";

export const WINDOWS = [
  { label: "1 min", seconds: 60 },
  { label: "10 min", seconds: 600 },
  { label: "1 h", seconds: 3600 },
  { label: "all", seconds: null },
];

// One toggle per optional panel (chart.js OPTIONAL_PANELS), shown when a column is drawn there.
const TOGGLES = [
  { key: "power", label: "power" },
  { key: "temperature", label: "temperature" },
  { key: "rss", label: "host RSS" },
  { key: "kinds", label: "by kind" }, // each cell's memory by kind, stacked in its band
];

// Values of the host selector: this kernel's panels, every node's, or one host's ("host:NAME").
export const LOCAL = "local";
export const ALL_NODES = "all";
export const hostValue = (host) => `host:${host}`;

export class Controls {
  /**
   * @param {{state: object, onChange: (patch: object) => void}} o state: {window, node, gpu,
   *   toggles}; node: LOCAL, ALL_NODES or hostValue(host)
   */
  constructor({ state, onChange }) {
    this.onChange = onChange;
    this.listeners = [];
    this.el = document.createElement("div");
    this.el.className = "nbgpumon-controls";

    const group = document.createElement("div");
    group.className = "nbgpumon-windows";
    group.setAttribute("role", "group");
    this.windowButtons = WINDOWS.map((w) => {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = w.label;
      b.dataset.window = w.seconds === null ? "all" : String(w.seconds);
      this._listen(b, "click", () => this.onChange({ window: w.seconds }));
      group.append(b);
      return b;
    });

    this.shown = document.createElement("span");
    this.shown.className = "nbgpumon-shown";

    this.gpuSelect = document.createElement("select");
    this.gpuSelect.className = "nbgpumon-gpu";
    this.gpuSelect.hidden = true;
    this._listen(this.gpuSelect, "change", () => {
      const v = this.gpuSelect.value;
      this.onChange({ gpu: v === "all" ? "all" : Number(v) });
    });
    this.deviceKey = null;

    this.hostLabel = document.createElement("label");
    this.hostLabel.className = "nbgpumon-host";
    this.hostLabel.hidden = true;
    this.hostSelect = document.createElement("select");
    this.hostSelect.className = "nbgpumon-host-select";
    this.hostLabel.append(document.createTextNode("node "), this.hostSelect);
    this._listen(this.hostSelect, "change", () => this.onChange({ node: this.hostSelect.value }));
    this.hostKey = null;

    const toggles = document.createElement("div");
    toggles.className = "nbgpumon-toggles";
    this.toggles = TOGGLES.map((t) => {
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.dataset.toggle = t.key;
      this._listen(box, "change", () => this.onChange({ toggles: { [t.key]: box.checked } }));
      label.append(box, document.createTextNode(` ${t.label}`));
      toggles.append(label);
      return { ...t, label, box };
    });

    this.togglesEl = toggles;
    // what the "by kind" bands' colours are: the kinds the cells held (legendKinds)
    this.kindsLegend = document.createElement("span");
    this.kindsLegend.className = "nbgpumon-kinds-legend";
    this.kindsKey = null;
    this.el.append(group, this.shown, this.hostLabel, this.gpuSelect, toggles, this.kindsLegend);
    this.update({ devices: [], columns: [], state, shown: "" });
  }

  _listen(target, type, fn) {
    target.addEventListener(type, fn);
    this.listeners.push([target, type, fn]);
  }

  /**
   * Reflect devices, columns (their metadata), the other nodes' `hosts` and the view state;
   * `shown`: the note next to the window; `kinds`: the kinds of memory the shown GPUs' cells
   * held (the "by kind" legend's entries).
   */
  update({ devices, columns, state, shown = "", hosts = [], kinds = new Set() }) {
    if (this.shown.textContent !== shown) this.shown.textContent = shown;
    this.shown.hidden = !shown;
    for (const b of this.windowButtons) {
      const on = b.dataset.window === (state.window === null ? "all" : String(state.window));
      b.classList.toggle("active", on);
      b.setAttribute("aria-pressed", on ? "true" : "false");
    }

    const key = JSON.stringify(devices.map((d) => [d.index, d.name, cudaLabelOf(d)]));
    if (key !== this.deviceKey) {
      this.deviceKey = key;
      const options = [];
      if (devices.length > 1) {
        const all = document.createElement("option");
        all.value = "all";
        all.textContent = "all GPUs";
        options.push(all);
      }
      for (const d of devices) {
        const o = document.createElement("option");
        o.value = String(d.index);
        const cuda = cudaLabelOf(d);
        o.textContent = `GPU ${d.index}: ${d.name ?? ""}${cuda ? ` (${cuda})` : ""}`;
        options.push(o);
      }
      this.gpuSelect.replaceChildren(...options);
    }
    const local = (state.node ?? LOCAL) === LOCAL;
    this.gpuSelect.hidden = devices.length <= 1 || !local;
    this.gpuSelect.value = String(state.gpu);
    this.togglesEl.hidden = !local;

    const hostKey = JSON.stringify(hosts);
    if (hostKey !== this.hostKey) {
      this.hostKey = hostKey;
      const option = (value, text) => {
        const o = document.createElement("option");
        o.value = value;
        o.textContent = text; // a host name is user data: text, never HTML
        return o;
      };
      this.hostSelect.replaceChildren(
        option(LOCAL, "this kernel"),
        option(ALL_NODES, "all nodes"),
        ...hosts.map((h) => option(hostValue(h), h)),
      );
    }
    this.hostLabel.hidden = hosts.length === 0;
    this.hostSelect.value = state.node ?? LOCAL;

    const drawn = (panel, host) =>
      columns.some((c) => c && c.chart === "series" && c.panel === panel && (c.device === null) === host);
    for (const t of this.toggles) {
      const available = t.key === "rss"
        ? drawn("rss", true) && devices.length > 0 // without a GPU, RSS is always shown
        : t.key === "kinds"
          ? devices.length > 0 // (in the memory panels: no panel of its own)
          : drawn(t.key, false);
      t.label.hidden = !available;
      t.box.checked = Boolean(state.toggles[t.key]);
    }
    const entries = legendKinds(kinds);
    const kindsKey = JSON.stringify(entries);
    if (kindsKey !== this.kindsKey) {
      this.kindsKey = kindsKey;
      this.kindsLegend.replaceChildren(
        ...entries.flatMap(([kind, color]) => {
          const swatch = document.createElement("span");
          swatch.className = "nbgpumon-swatch";
          swatch.style.background = color;
          return [swatch, document.createTextNode(` ${kind} `)]; // text, never HTML
        }),
      );
    }
    this.kindsLegend.hidden = !(local && devices.length > 0 && state.toggles.kinds && entries.length);
  }

  destroy() {
    for (const [target, type, fn] of this.listeners) target.removeEventListener(type, fn);
    this.listeners = [];
    this.el.remove();
  }
}

/**
 * The "by kind" legend's [label, colour] entries for the kinds in `kinds`: those with a colour
 * of their own in KIND_COLORS' order, then one "other" for the rest (they share its grey).
 */
export function legendKinds(kinds) {
  const drawn = new Set([...kinds].map(kindGroup));
  const entries = Object.entries(KIND_COLORS).filter(([kind]) => drawn.has(kind));
  const other = [...drawn].some((kind) => !(kind in KIND_COLORS));
  return other ? [...entries, ["other", OTHER_COLOR]] : entries;
}
