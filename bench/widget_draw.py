"""Browser draw time per frame of the live widget with 100k visible points (target <= 8 ms).

Headless Chromium (Debian's, at /usr/bin/chromium) loads the built bundle
(nbgpumon/static/widget.js) into a blank page with a stand-in for anywidget's model, feeds it
100,000 rows of samples through the same ``samples`` messages the kernel sends, selects the
"all" window so every row is in the time window, then appends one row per animation frame. Each
frame is timed from the widget's requestAnimationFrame callback to the end of the microtasks
after it (uPlot draws in a microtask queued by setData). Runs with 1 GPU and with 8 GPUs of data
(8 GPUs: first GPU shown, then "all GPUs" in a 900 px viewport that shows a few of the 16
panels, and in a 3,200 px one that shows all of them).
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
from pathlib import Path
from typing import Any

import result_file
import stats

from nbgpumon._foundation.metrics import REGISTRY, describe_columns

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 8.0
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]  # fmt: skip

PAGE = """<!doctype html><html><head><link rel="icon" href="data:,"></head>
<body style="width:1000px"><div id="out"></div><script type="module">
import widget from "/nbgpumon/static/widget.js";
const raf = window.requestAnimationFrame.bind(window);
window.rawRaf = raf;  // the benchmark's own waiting, not timed
window.frames_ms = [];
// uPlot draws in a microtask queued by setData (and queues hooks from there): the frame is
// timed to the end of a chain of microtasks queued behind those.
window.depth = 2;
const settled = (n) => (n ? Promise.resolve().then(() => settled(n - 1)) : Promise.resolve());
window.requestAnimationFrame = (cb) => raf((t) => {
  const s = performance.now();
  cb(t);
  settled(window.depth).then(() => window.frames_ms.push(performance.now() - s));
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
window.n = 0;
window.cleanups = [];
window.setup = (gpus, rows, cols) => {  // cols: the registry's metadata, from the kernel side
  const devices = [...Array(gpus).keys()].map((g) => ({index: g, name: "GPU " + g,
    memory_total: 150e9, cuda_index: g}));
  const model = fakeModel({columns: cols, devices, history: new DataView(new ArrayBuffer(0)),
    cells: [], marks: [], status: "benchmark", interval: 0.1, _uid: `bench-${gpus}-${++window.n}`});
  window.model = model; window.width = cols.length; window.t = 1.7e9; window.cursor = 0;
  window.scale = cols.map((c) => (c.unit === "percent" ? 50 : c.unit === "celsius" ? 40 : 1e9));
  for (const cleanup of window.cleanups) cleanup();  // the previous case's view and model
  const el = document.getElementById("out"); el.textContent = "";
  window.cleanups = [widget.initialize({model}), widget.render({model, el})];
  window.push(rows);
};
window.push = (n) => {
  const w = window.width, times = new Float64Array(n), values = new Float32Array(n * w);
  for (let i = 0; i < n; i++) {
    times[i] = window.t; window.t += 0.1;
    for (let j = 0; j < w; j++) {
      values[i * w + j] = window.scale[j] * (1 + Math.sin(window.t / 7 + j));
    }
  }
  window.model.emit("msg:custom", {type: "samples", start: window.cursor, rows: n, width: w,
    gap: false}, [new DataView(times.buffer), new DataView(values.buffer)]);
  window.cursor += n;
};
window.ready = true;
</script></body></html>"""


ON_SCREEN = """() => [...document.querySelectorAll("[data-panel]")].filter((el) => {
  const r = el.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight;
}).length"""


def add_arguments(parser: Any) -> None:
    parser.add_argument("--rows", type=int, default=100_000, help="samples in view")
    parser.add_argument("--frames", type=int, default=120, help="frames timed per case")


def serve() -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(ROOT))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (ROOT / "bench" / "widget_draw.html").write_text(PAGE)
    return server, f"http://127.0.0.1:{server.server_address[1]}/bench/widget_draw.html"


def time_frames(page: Any, frames: int) -> list[float]:
    page.evaluate("window.frames_ms = []")
    for _ in range(frames):
        page.evaluate("window.push(1)")
        page.evaluate("() => new Promise((r) => window.rawRaf(() => r()))")
    return [float(v) for v in page.evaluate("window.frames_ms")]


def columns_of(gpus: int) -> list[dict[str, object]]:
    """What the kernel's widget sends as ``columns`` for ``gpus`` GPUs: NVML's and torch's
    metrics per GPU and the host's, with the registry's metadata (the front end builds its
    panels from it)."""
    names = [m.column(g) for g in range(gpus) for m in REGISTRY if m.source in ("nvml", "torch")]
    names += [m.column() for m in REGISTRY if m.scope == "host"]
    return describe_columns(names)


def main() -> None:
    from playwright.sync_api import sync_playwright

    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("widget_draw", args)
    rows = 10_000 if args.quick else args.rows
    frames = 30 if args.quick else args.frames
    server, url = serve()
    errors: list[str] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(url)
            page.wait_for_function("window.ready === true")
            # (GPUs of data, GPU shown, viewport height): 16 panels are ~3,000 px tall; the 900 px
            # viewport shows a few of them (the rest are not redrawn), the 3,200 px one all.
            cases = ((1, "first", 900), (8, "first", 900), (8, "all", 900), (8, "all", 3200))
            for gpus, view, height in cases:
                page.set_viewport_size({"width": 1100, "height": height})
                page.evaluate(f"window.setup({gpus}, {rows}, {json.dumps(columns_of(gpus))})")
                page.click('[data-window="all"]')
                if view == "all":
                    page.select_option(".nbgpumon-gpu", value="all")
                time_frames(page, 10)  # warm-up: first layout, JIT
                ms = time_frames(page, frames)
                held = int(page.get_attribute(".nbgpumon-widget", "data-points") or 0)
                panels = page.locator("[data-panel]").count()
                on_screen = page.evaluate(ON_SCREEN)
                if not ms:
                    result.skip(f"{gpus} GPU(s), {view}", "the widget drew no frame")
                    continue
                d = stats.describe(ms)
                label = f"draw per frame, {gpus} GPU(s) of data, {view} GPU shown, {height} px high"
                result.log(
                    f"{label}: median {d['median']:.2f} ms, p90 {d['p90']:.2f} ({held} rows, "
                    f"{panels} panels, {on_screen} on screen)"
                )
                result.add(
                    label,
                    d["median"],
                    "ms",
                    TARGET_MS,
                    note=f"p90 {d['p90']:.2f} ms, max {d['max']:.2f} ms; {held} rows "
                    f"held, all in view; {panels} panels, {on_screen} on screen; {frames} frames",
                )
                shot = args.out / f"widget_draw_{gpus}gpu_{view}_{height}px.png"
                page.screenshot(path=str(shot))
            browser.close()
    finally:
        server.shutdown()
        (ROOT / "bench" / "widget_draw.html").unlink(missing_ok=True)
    if errors:
        result.details["page_errors"] = errors
        result.log(f"page errors: {errors[:3]}")
    result.finish()


if __name__ == "__main__":
    main()
