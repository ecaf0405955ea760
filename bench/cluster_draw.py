"""Browser draw time per frame of the widget's cluster view: 32 remote GPUs (8 nodes x 4 GPUs).

Headless Chromium (Debian's, at /usr/bin/chromium) loads the built bundle
(nbgpumon/static/widget.js) into a blank page with a stand-in for anywidget's model, as
widget_draw.py does. The model holds one local GPU (1,000 rows) and a cluster of 8 nodes x 4
GPUs (mem_used, mem_total, gpu_util, power, temperature each: 160 columns), fed 1,500 rows
through the same ``node_samples`` messages the kernel sends; the "all" window puts every row
in view. Then one cluster row arrives per animation frame (a new Prometheus answer) and each
frame is timed, from the widget's requestAnimationFrame callback to the end of the microtasks
after it. Cases: "all nodes" (16 panels) in a 900 px viewport (a few on screen) and a 3,200 px
one (all of them), one host (2 panels), and 40 nodes x 3 GPUs (8 nodes' panels, 32 summary
rows: the bound on what exists however many nodes answer).
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path
from typing import Any

import result_file
import stats

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 8.0  # the live chart's frame budget (widget_draw.py)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]  # fmt: skip
PAGE_NAME = "cluster_draw.html"

PAGE = """<!doctype html><html><head><link rel="icon" href="data:,"></head>
<body style="width:1000px"><div id="out"></div><script type="module">
import widget from "/nbgpumon/static/widget.js";
const raf = window.requestAnimationFrame.bind(window);
window.rawRaf = raf;  // the benchmark's own waiting, not timed
window.frames_ms = [];
const settled = (n) => (n ? Promise.resolve().then(() => settled(n - 1)) : Promise.resolve());
window.requestAnimationFrame = (cb) => raf((t) => {
  const s = performance.now();
  cb(t);
  settled(2).then(() => window.frames_ms.push(performance.now() - s));
});
function fakeModel(state) {
  const handlers = new Map();
  return {
    get: (k) => state[k], set: (k, v) => { state[k] = v; }, save_changes() {}, send() {},
    on(ev, cb) { if (!handlers.has(ev)) handlers.set(ev, new Set()); handlers.get(ev).add(cb); },
    off(ev, cb) { handlers.get(ev)?.delete(cb); },
    emit(ev, ...args) { for (const cb of handlers.get(ev) || []) cb(...args); },
  };
}
const METRICS = {
  mem_used: ["bytes", "memory", "used", "series", 25],
  mem_total: ["bytes", "memory", "total", "limit", 26],
  gpu_util: ["percent", "util", "GPU", "series", 27],
  power: ["watts", "power", "power", "", 28],
  temperature: ["celsius", "temperature", "temperature", "", 29],
};
function samples(type, start, times, values, width) {
  return [{type, start, rows: times.length, width, gap: false, version: 1},
          [new DataView(times.buffer), new DataView(values.buffer)]];
}
window.n = 0;
window.cleanups = [];
window.setup = (nodes, gpus, rows) => {
  const cols = [];
  for (let k = 0; k < nodes; k++) {
    const host = `node-${String(k + 1).padStart(2, "0")}.cluster.example`;
    for (let g = 0; g < gpus; g++) {
      for (const [metric, [unit, panel, label, chart, order]] of Object.entries(METRICS)) {
        cols.push({source: "cluster", name: `node:${host}.gpu${g}.${metric}`, unit, panel,
          label, chart, kind: "gauge", scope: "node", metric, device: null, order, node: host,
          gpu: `gpu${g}`});
      }
    }
  }
  const hosts = [...new Set(cols.map((c) => c.node))];
  const nodeList = hosts.map((host) => ({host, last_seen: 1.7e9,
    gpus: [...Array(gpus).keys()].map((g) => ({gpu: `gpu${g}`, model: "NVIDIA H100 80GB HBM3",
      uuid: "", pod: "", namespace: "", origin: "dcgm", mig_profile: ""}))}));
  const local = ["gpu0.nvml.mem_used", "gpu0.nvml.mem_total", "gpu0.nvml.gpu_util", "host.rss"];
  const model = fakeModel({columns: local, devices: [{index: 0, name: "GPU", memory_total: 150e9,
    cuda_index: 0}], history: new DataView(new ArrayBuffer(0)), cells: [], marks: [],
    status: "benchmark", interval: 0.1, node_columns: cols, nodes: nodeList,
    node_history: new DataView(new ArrayBuffer(0)), cluster_status: "benchmark",
    _uid: `cluster-${++window.n}`});
  window.model = model; window.width = cols.length; window.t = 1.7e9; window.cursor = 0;
  window.scale = cols.map((c) => (c.metric === "gpu_util" ? 50 : c.metric === "power" ? 300 :
    c.metric === "temperature" ? 40 : 40e9));
  for (const cleanup of window.cleanups) cleanup();  // the previous case's view and model
  const el = document.getElementById("out"); el.textContent = "";
  window.cleanups = [widget.initialize({model}), widget.render({model, el})];
  const lt = new Float64Array(1000), lv = new Float32Array(4000);
  for (let i = 0; i < 1000; i++) {
    lt[i] = window.t - 1500 * 15 + i * 0.1;
    lv.fill(1e9, 4 * i, 4 * i + 4);
  }
  model.emit("msg:custom", ...samples("samples", 0, lt, lv, 4));
  window.push(rows);
  return hosts;
};
window.push = (n) => {  // n cluster rows, 15 s apart (a scrape interval)
  const w = window.width, times = new Float64Array(n), values = new Float32Array(n * w);
  for (let i = 0; i < n; i++) {
    times[i] = window.t; window.t += 15;
    for (let j = 0; j < w; j++) {
      values[i * w + j] = window.scale[j] * (1 + Math.sin(window.t / 700 + j));
    }
  }
  window.model.emit("msg:custom", ...samples("node_samples", window.cursor, times, values, w));
  window.cursor += n;
};
window.ready = true;
</script></body></html>"""

ON_SCREEN = """() => [...document.querySelectorAll(".nbgpumon-nodes [data-panel]")].filter((el) => {
  const r = el.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight;
}).length"""


def add_arguments(parser: Any) -> None:
    parser.add_argument("--rows", type=int, default=1500, help="cluster rows in view")
    parser.add_argument("--frames", type=int, default=120, help="frames timed per case")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # the benchmark's output is its numbers


def serve() -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_Quiet, directory=str(ROOT))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (ROOT / "bench" / PAGE_NAME).write_text(PAGE)
    return server, f"http://127.0.0.1:{server.server_address[1]}/bench/{PAGE_NAME}"


def time_frames(page: Any, frames: int) -> list[float]:
    page.evaluate("window.frames_ms = []")
    for _ in range(frames):
        page.evaluate("window.push(1)")
        page.evaluate("() => new Promise((r) => window.rawRaf(() => r()))")
    return [float(v) for v in page.evaluate("window.frames_ms")]


def main() -> None:
    from playwright.sync_api import sync_playwright

    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("cluster_draw", args)
    frames = 30 if args.quick else args.frames
    server, url = serve()
    errors: list[str] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(url)
            page.wait_for_function("window.ready === true")
            # (nodes, GPUs each, what is shown, viewport height)
            cases = ((8, 4, "all", 900), (8, 4, "all", 3200), (8, 4, "host", 900),
                     (40, 3, "all", 900))  # fmt: skip
            for nodes, gpus, view, height in cases:
                page.set_viewport_size({"width": 1100, "height": height})
                hosts = page.evaluate(f"window.setup({nodes}, {gpus}, {args.rows})")
                page.click('[data-window="all"]')
                choice = "all" if view == "all" else f"host:{hosts[0]}"
                page.select_option(".nbgpumon-host-select", value=choice)
                time_frames(page, 10)  # warm-up: first layout, JIT
                ms = time_frames(page, frames)
                panels = page.locator(".nbgpumon-nodes [data-panel]").count()
                summary = page.locator(".nbgpumon-summary tbody tr").count()
                on_screen = page.evaluate(ON_SCREEN)
                shown = "all nodes" if view == "all" else "one host"
                label = f"cluster draw per frame, {nodes} nodes x {gpus} GPUs, {shown}, {height} px"
                if not ms:
                    result.skip(label, "the widget drew no frame")
                    continue
                d = stats.describe(ms)
                rows = args.rows + 10 + frames
                result.log(
                    f"{label}: median {d['median']:.2f} ms, p90 {d['p90']:.2f} ({panels} panels, "
                    f"{on_screen} on screen, {summary} summary rows, {rows} rows)"
                )
                result.add(
                    label,
                    d["median"],
                    "ms",
                    TARGET_MS,
                    note=f"p90 {d['p90']:.2f} ms, max {d['max']:.2f} ms; {rows} cluster rows "
                    f"in view; {panels} panels, {on_screen} on screen, {summary} summary rows; "
                    f"{frames} frames",
                )
                shot = args.out / f"cluster_draw_{nodes}x{gpus}_{view}_{height}px.png"
                page.screenshot(path=str(shot))
            browser.close()
    finally:
        server.shutdown()
        (ROOT / "bench" / PAGE_NAME).unlink(missing_ok=True)
    if errors:
        result.details["page_errors"] = errors
        result.log(f"page errors: {errors[:3]}")
    result.finish()


if __name__ == "__main__":
    main()
