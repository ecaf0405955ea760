"""Browser draw time per frame of the live widget with 100k visible points (target <= 8 ms).

Headless Chromium (Debian's, at /usr/bin/chromium) loads the built bundle
(nbgpumon/static/widget.js) into a blank page with a stand-in for anywidget's model, feeds it
100,000 rows of samples through the same ``samples`` messages the kernel sends, selects the
"all" window so every row is in the time window, then appends one row per animation frame. Each
frame is timed from the widget's requestAnimationFrame callback to the end of the microtasks
after it (uPlot draws in a microtask queued by setData). Runs with 1 GPU and with 8 GPUs of data
(8 GPUs: first GPU shown, then "all GPUs" in a 900 px viewport that shows a few of the 16
panels, and in a 3,200 px one that shows all of them).

Then a ledger of 10,000 cells (``--cells``) over those rows, one GPU: a new row per frame with
the bands of all of them in view, and of the last 10 min; the table scrolled a step per frame;
a new cell per frame (``--cells-via message``: a ``cells`` message, as the kernel sends one now;
``trait``: the whole ``cells`` list again, as it used to). These frames are timed to the end of
a forced style and layout, so the table's cost to the browser counts too.
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

from nbgpumon._foundation.metrics import describe_columns, registry

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
// With `layout` set, the frame's style and layout are forced at its end, and timed with it:
// what a table of many rows costs the browser is there, not in the script.
window.layout = false;
window.requestAnimationFrame = (cb) => raf((t) => {
  const s = performance.now();
  cb(t);
  settled(window.depth).then(() => {
    if (window.layout) document.body.getBoundingClientRect();
    window.frames_ms.push(performance.now() - s);
  });
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
  window.model = model; window.width = cols.length; window.t = window.t0 = 1.7e9;
  window.cursor = 0;
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
// A ledger of `n` cells over the rows pushed so far: one every `step` s, each 60% of it long.
window.ledgerRow = (k, start, step) => ({name: `[${k + 1}]`, count: k + 1, index: k,
  kind: "cell", label: `step(${k})  # <b>text</b>`, start, end: start + 0.6 * step,
  duration: 0.6 * step, status: k % 97 ? "ok" : "error", alloc: 1 << 20, peak: 1 << 21,
  peak_exact: true, kept: 0, util_mean: 50, util_max: 90, host_delta: 4096,
  summary: `[${k + 1}] +1.0 MiB alloc`, held_by: "", frameworks: [], frameworks_named: false});
window.setCells = (n) => {
  const t0 = window.t0, step = (window.t - t0) / n;
  const cells = [...Array(n).keys()].map((k) => window.ledgerRow(k, t0 + k * step, step));
  window.cellStep = step; window.cellCount = n; window.cellList = cells;
  window.model.set("cells", cells); window.model.emit("change:cells");
};
// One more cell, as the kernel sends it: the `cells` trait again (the old protocol) or a
// `cells` message with the new row (the incremental one), whichever this bundle reads.
window.addCell = (via) => {
  const k = window.cellCount++, row = window.ledgerRow(k, window.t - 0.5, 0.4);
  if (via === "message") {
    window.model.emit("msg:custom", {type: "cells", first: 0, rows: [row]}, []);
  } else {
    window.cellList = [...window.cellList, row];
    window.model.set("cells", window.cellList); window.model.emit("change:cells");
  }
};
window.ready = true;
</script></body></html>"""


ON_SCREEN = """() => [...document.querySelectorAll("[data-panel]")].filter((el) => {
  const r = el.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight;
}).length"""


def add_arguments(parser: Any) -> None:
    parser.add_argument("--rows", type=int, default=100_000, help="samples in view")
    parser.add_argument("--frames", type=int, default=120, help="frames timed per case")
    parser.add_argument("--cells", type=int, default=10_000, help="ledger rows, cells cases")
    parser.add_argument(
        "--cells-via",
        choices=("message", "trait"),
        default="message",
        help="how a new cell reaches the widget: a cells message, or the whole trait again",
    )
    parser.add_argument("--only-cells", action="store_true", help="only the ledger's cases")


def serve() -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(ROOT))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (ROOT / "bench" / "widget_draw.html").write_text(PAGE)
    return server, f"http://127.0.0.1:{server.server_address[1]}/bench/widget_draw.html"


def time_frames(page: Any, frames: int, step: str = "window.push(1)") -> list[float]:
    """Milliseconds of ``frames`` frames, each after ``step`` (a new row, by default)."""
    page.evaluate("window.frames_ms = []")
    for _ in range(frames):
        page.evaluate(step)
        page.evaluate("() => new Promise((r) => window.rawRaf(() => r()))")
    return [float(v) for v in page.evaluate("window.frames_ms")]


def columns_of(gpus: int) -> list[dict[str, object]]:
    """What the kernel's widget sends as ``columns`` for ``gpus`` GPUs: NVML's and torch's
    metrics per GPU and the host's, with the registry's metadata (the front end builds its
    panels from it)."""
    names = [m.column(g) for g in range(gpus) for m in registry() if m.source in ("nvml", "torch")]
    names += [m.column() for m in registry() if m.scope == "host"]
    return describe_columns(names)


def report(result: Any, label: str, ms: list[float], note: str) -> None:
    """One timed case in the log and the result file (median against the budget, p90 noted)."""
    if not ms:
        result.skip(label, "the widget drew no frame")
        return
    d = stats.describe(ms)
    result.log(f"{label}: median {d['median']:.2f} ms, p90 {d['p90']:.2f} ({note})")
    result.add(
        label,
        d["median"],
        "ms",
        TARGET_MS,
        note=f"p90 {d['p90']:.2f} ms, max {d['max']:.2f} ms; {note}; {len(ms)} frames",
    )


def sample_cases(page: Any, args: Any, rows: int, frames: int, result: Any) -> None:
    """1 and 8 GPUs of data, every row in view, a new row per frame."""
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
        label = f"draw per frame, {gpus} GPU(s) of data, {view} GPU shown, {height} px high"
        report(result, label, ms, f"{held} rows held, all in view; {panels} panels, "
               f"{on_screen} on screen")  # fmt: skip
        page.screenshot(path=str(args.out / f"widget_draw_{gpus}gpu_{view}_{height}px.png"))


TABLE_ROWS = "() => document.querySelectorAll('.nbgpumon-table tbody tr[data-key]').length"
SCROLL = """(px) => { const w = document.querySelector('.nbgpumon-table').parentElement;
  w.scrollTop = (w.scrollTop + px) % Math.max(1, w.scrollHeight - w.clientHeight); }"""


def ledger_cases(page: Any, args: Any, rows: int, frames: int, result: Any) -> None:
    """A ledger of ``args.cells`` cells over the rows held (1 GPU): the table under the chart,
    the bands over all of it and over 10 min, the table scrolled a step per frame, and a new
    cell per frame (sent as ``args.cells_via`` says)."""
    n = args.cells
    page.set_viewport_size({"width": 1100, "height": 900})
    page.evaluate(f"window.setup(1, {rows}, {json.dumps(columns_of(1))})")
    page.evaluate(f"window.setCells({n})")
    page.evaluate("window.layout = true")
    via = json.dumps(args.cells_via)
    cases = (
        ("all", "window.push(1)", "a new row per frame, bands over all the time held"),
        ("600", "window.push(1)", "a new row per frame, bands over the last 10 min"),
        ("600", f"({SCROLL})(173), window.push(1)", "the table scrolled 173 px and a new row"),
        ("600", f"({SCROLL})(36), window.push(1)", "the table scrolled 36 px and a new row"),
        (
            "all",
            f"window.push(1), window.addCell({via})",
            f"a new row and a new cell per frame (as a {args.cells_via})",
        ),
    )
    for window, step, what in cases:
        page.click(f'[data-window="{window}"]')
        time_frames(page, 10, step)  # warm-up
        ms = time_frames(page, frames, step)
        in_dom = page.evaluate(TABLE_ROWS)
        held = page.evaluate("window.cellCount")
        report(result, f"draw per frame, {n:,} cells in the ledger, {what}", ms,
               f"{held} cells held, {in_dom} table rows in the DOM; {rows} samples")  # fmt: skip
    page.screenshot(path=str(args.out / f"widget_draw_{n}cells.png"))
    page.evaluate("window.layout = false")


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
            if not args.only_cells:
                sample_cases(page, args, rows, frames, result)
            ledger_cases(page, args, rows, frames, result)
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
