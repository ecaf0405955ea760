"""The live chart is one anywidget per session, fed by a publisher (on the sampler's ticks, live).

The protocol (traits, the ``samples`` and ``cells`` messages, the packed history) is in
docs/widget-protocol.md. The kernel sends only what is new: samples at most twice a second, the
ledger a row per record after each cell; every view of the widget shares the browser model's
copy, so views cost the kernel nothing. Widget state
changes happen under one lock, whichever thread makes them.

The sampler's thread publishes everything: the samples, the running cell, the ledger's new
rows and the marks, on its ticks, so that a cell's start and end cost the main thread two
flags (issue 43). A front end that drops what other threads send (Colab) gets the running cell,
the samples and the ledger from the main thread as well, at each cell's start and end
(``main_thread_sends``).
"""

from __future__ import annotations

import struct
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
from traitlets import Bytes, Float, Int, Unicode

from ..._foundation.gil import give_way
from ..._foundation.metrics import describe_columns, device_of, device_role
from ..._foundation.windows import Chunk, Window
from ..._foundation.wording import format_bytes
from ..._ledger.records import CellRecord
from ..chart.svg import timeline_svg
from ..memory.explain import kinds_words
from ..status.cluster import cluster_status
from ..status.session_status import status_line
from ..words.cell_summary import (
    framework_figures,
    retention_text,
    shown_peak_and_kept,
    summary_line,
)
from ..words.children import children_text
from .cells_message import cells_message, rows_json
from .traits import CELL, COLUMN, DEVICE, MARK, NODE, RUNNING, Row, Rows

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..._session.facts.session_data import Cluster, Device, SessionData

BUNDLE = Path(__file__).parents[2] / "static" / "widget.js"  # nbgpumon/static
SEND_EVERY = 0.5  # seconds between samples messages: <= 2 messages/s, <= 1 s latency
HISTORY_EVERY = 30.0  # at most one history refresh per this many seconds (it is ~1 MB a GPU)
STATUS_EVERY = 2.0
ROWS_AT_ONCE = 8  # ledger rows made before the sampler's thread gives the GIL up again
STALLED_AFTER = 2.0  # seconds without a tick (or three intervals) before the main thread sends
HISTORY_ROWS = 4000
NODE_HISTORY_ROWS = 1500  # the cluster's rows come every scrape interval: fewer of them


_MISSING_BUNDLE = (  # a development checkout whose JS was never built says so, in the page
    "export default { render({ el }) { el.textContent = "
    "'nbgpumon: the widget bundle is not built; run npm install && npm run build in js/'; } };"
)


class GPUMonWidget(anywidget.AnyWidget):
    """Live GPU chart, cell table and status line (see docs/widget-protocol.md)."""

    # The bundle's text, not its path: for a path anywidget connects a file-watch callback
    # that holds every instance for good, and each %reload_ext would leak a widget.
    _esm = BUNDLE.read_text(encoding="utf-8") if BUNDLE.exists() else _MISSING_BUNDLE
    # typed (widget_traits.py): a malformed value is refused here with a TraitError saying
    # where, not sent to fail in the browser
    columns = Rows(COLUMN).tag(sync=True)  # each: name, unit, panel, label, ... (registry)
    devices = Rows(DEVICE).tag(sync=True)
    history = Bytes(b"").tag(sync=True)
    history_cursor = Int(0).tag(sync=True)  # the timeline's cursor when `history` was packed
    cells = Rows(CELL).tag(sync=True)
    running = Row(RUNNING).tag(sync=True)  # the cell being measured now; {} between cells
    marks = Rows(MARK).tag(sync=True)
    status = Unicode("").tag(sync=True)
    interval = Float(0.1).tag(sync=True)
    # other nodes' GPUs (a cluster read from Prometheus); empty until there is one
    node_columns = Rows(COLUMN).tag(sync=True)  # each: name, node, gpu, unit, panel, ...
    nodes = Rows(NODE).tag(sync=True)  # each: host, gpus [{gpu, model, pod, ...}], last_seen
    node_history = Bytes(b"").tag(sync=True)
    cluster_status = Unicode("").tag(sync=True)
    # anywidget gives initialize() and each render() its own proxy of the model; the front
    # end finds the one store they share by this id
    _uid = Unicode().tag(sync=True)

    def __init__(self, data: SessionData, **kwargs: Any) -> None:
        self._fresh_history: Callable[[], dict[str, Any]] | None = None
        super().__init__(_uid=uuid.uuid4().hex, **kwargs)
        self._data: SessionData | None = data
        _route_to_main_shell(self.comm)

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        """The traits as ipywidgets sends them. The whole state (``key`` None: a page that connects,
        or connects again, asks for it) comes with the history packed now, so that the page starts
        where the stream is, not at the last snapshot (which may be minutes or hours old on an idle
        kernel, older than the rows a resend could still give)."""
        state = super().get_state(key, drop_defaults)
        if key is None and self._fresh_history is not None:
            state.update(self._fresh_history())
        return state

    def detach(self) -> None:
        """Close the widget and let go of its session (a closed one must not stay alive)."""
        self._data = None
        self.close()

    # ipywidgets 7 (Colab ships 7.7.1) displays a widget through its own _ipython_display_,
    # which IPython prefers to _repr_mimebundle_ and which sends the widget's view alone: no
    # picture or text for other front ends. Not callable, IPython skips it for the bundle below.
    _ipython_display_ = None

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # Front ends without widget support (nbconvert, GitHub, a terminal) show these.
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if isinstance(data, dict) and self._data is not None:
            data["text/plain"] = plain_summary(self._data)
            data["image/svg+xml"] = static_svg(self._data)
        return bundle


def _route_to_main_shell(comm: Any) -> None:
    """Have the kernel handle what the browser sends this widget on its main shell.

    ipykernel 7.4 sends a comm's incoming messages to the subshell named in the parent of
    the comm's last outgoing message (``_reply_subshell_for``), whatever subshell the
    incoming one names. Ours go out with whatever request was handled last as parent: the
    sampler's thread borrows the newest one, and a ``fill`` answers a request that came over
    the page's subshell. JupyterLab 4.6 sends every comm's messages over a subshell of the
    page's, and deletes it when done with it (the widget manager's control comm's, after a
    reload; all of them when the page goes). Every ``resend`` (and ``request_state``) then
    met "Unknown subshell_id" and was dropped, and the hole it asked about stayed: a break
    in the lines after each reload. The main shell is always there, and is where
    docs/widget-protocol.md says these are handled. Other kernels (ipykernel 6, marimo's
    comm) have no such hook, and are left as they are.
    """
    if comm is not None and hasattr(comm, "_reply_subshell_for"):
        comm._reply_subshell_for = lambda _data, _default: None


class Publisher:
    """Keeps one widget current with a session: a live one calls it after each tick, on the
    sampler's thread; a recording's is complete at once (its history is everything)."""

    def __init__(
        self, data: SessionData, widget: GPUMonWidget, main_thread_sends: bool = False
    ) -> None:
        self._data, self.widget = data, widget
        # a front end that drops other threads' messages (Colab) hears the main thread's
        self.main_thread_sends = main_thread_sends
        self._lock = threading.Lock()
        self._cursor = data.cursor
        self._next_send = self._next_history = self._next_status = 0.0
        # set by the main thread when a cell starts or ends (a mark is set): the sampler's
        # thread publishes the running cell, the ledger and the marks at its next tick
        self._cells_due = False
        self._ledger_due = False  # rows made since the last send, or the marks or running moved
        self._rows: list[dict[str, Any]] = []  # rows made and not sent yet (_make_rows)
        self._rows_json: list[bytes] = []  # the same as JSON, a few rows a buffer (cells_message)
        self._history_due = False  # a cell ended since the history snapshot was packed
        self._ticked = time.monotonic()  # the sampler's last tick, as this heard of it
        # seconds without a tick after which it has stalled (kept with the widget's interval:
        # a cell's start and end ask, and a trait's read costs microseconds there)
        self._stall_after = max(STALLED_AFTER, 3 * self.widget.interval)
        self.bytes_sent = 0  # payload bytes of samples messages, for the benchmark
        self.messages_sent = 0
        # the cluster's: its version when its columns were last sent (None: never), the
        # width sent then, its cursor just past the last row sent
        self._node_version: int | None = None
        self._node_width = 0
        self._node_cursor = 0
        self.node_messages_sent = 0
        self._newest_row = -1  # the ledger index of the newest record the widget has
        with self._lock:
            widget.columns = describe_columns(data.columns)
            widget.devices = describe_devices(data.devices)
        self._publish_all_cells()
        self._publish_ledger()
        self._publish_status()
        self.refresh_history(force=True)  # the cluster's too, if there is one
        self.resent_rows = 0  # rows sent again because the browser missed them
        widget._fresh_history = self._history_now
        widget.on_msg(self._on_browser_message)
        self._unsubscribe = data.subscribe(self)

    def __call__(self, cursor: int) -> None:
        """After a tick (the sampler's thread): what is new, at most every SEND_EVERY seconds
        (a cell's start and end with the samples: Run All's hundred cells a second cost the
        thread no more messages than an idle kernel)."""
        now = self._ticked = time.monotonic()
        if self._cells_due:
            # before the read: a cell that ends meanwhile sets it again. The new records' rows
            # are made at every tick, ROWS_AT_ONCE at a time with the GIL given up between: a
            # cell that starts meanwhile waits for a few rows at most, not for a tenth of a
            # second's (Run All on a fast host: fifty)
            self._cells_due = False
            self._ledger_due = True
            left = True
            while left:
                give_way()  # (after the tick's reads, and between the rows)
                with self._lock:
                    _first, left = self._make_rows(at_most=ROWS_AT_ONCE)
        if now < self._next_send:
            return
        self._next_send = now + SEND_EVERY
        # each message after the tick's reads, and after each other, with the GIL given up
        # first: a cell's start or end waits for one of them at most
        give_way()
        self.send_new()
        if self._ledger_due:  # (only then: the marks alone may be thousands)
            self._ledger_due = False
            give_way()
            self._publish_ledger()
        if self._history_due and now >= self._next_history:
            self._history_due = False
            give_way()
            self.refresh_history()
        details = now >= self._next_status
        if details:
            self._next_status = now + STATUS_EVERY
            give_way()
            self._publish_status()
        self.sync_cluster(details=details)

    def send_new(self, after_cell: bool = False) -> None:
        """Send every sample appended since the last call (one message, or none). It is called from
        the sampler's thread on its ticks, and from the main thread after each cell (``after_cell``:
        the message says so, so that the browser can tell a front end that drops the sampler
        thread's messages from a page that connected late)."""
        extra = {"after_cell": True} if after_cell else {}
        with self._lock:  # both threads send: one chunk at a time, the cursor moving forward
            chunk = self._data.since(self._cursor)
            if chunk.end <= chunk.start and after_cell and self._cursor > 0:
                # the sampler's thread has just sent the newest row: send it again, or a
                # front end that drops that thread's messages would not hear of this cell's
                chunk = self._data.since(self._cursor - 1)
            if chunk.end <= chunk.start:
                return
            header, buffers = _chunk_message("samples", chunk, **extra)
            self.widget.send(header, buffers=buffers)
            self._cursor = chunk.end
        self.bytes_sent += sum(len(b) for b in buffers)
        self.messages_sent += 1

    def _on_browser_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """What the browser sends (main thread). A ``main_thread`` request: its front end drops
        what the sampler's thread sends (``_main_thread_asked``). A ``resend`` request: the
        browser saw a ``samples`` message start past what it held, so messages sent before it
        never arrived (a front end that drops what the sampler's thread sends, as Colab does):
        the rows ``[from, to)`` again, as one ``samples`` message marked ``fill``. Anything
        else, or a range not sent yet, is ignored: the browser asks again at the next gap."""
        if isinstance(content, dict) and content.get("type") == "main_thread":
            self._main_thread_asked()
            return
        if not isinstance(content, dict) or content.get("type") != "resend":
            return
        start, stop = content.get("from"), content.get("to")
        if not (isinstance(start, int) and isinstance(stop, int) and 0 <= start < stop):
            return
        with self._lock:
            if stop > self._cursor:
                return
            chunk = self._data.since(start, stop - start)
            if chunk.end <= chunk.start:
                return  # the kernel's raw ring no longer holds them: the break stays
            header, buffers = _chunk_message("samples", chunk, fill=True)
            self.widget.send(header, buffers=buffers)
        self.resent_rows += chunk.end - chunk.start

    def _main_thread_asked(self) -> None:
        """A page heard none of the sampler thread's messages (main thread): its front end
        drops them. From now on the main thread sends a cell's changes too, and it catches the
        page up at once (the samples so far, the ledger, the status), so that it asks for the
        rows it missed. A recording's widget has no stream: nothing to do."""
        if self.main_thread_sends or self._data.status().live is None:
            return
        self.main_thread_sends = True
        self.send_new(after_cell=True)
        self._publish_ledger()
        self._next_status = time.monotonic() + STATUS_EVERY
        self._publish_status()

    def sync_cluster(self, details: bool = False, history: bool = False) -> None:
        """Other nodes' GPUs, if a cluster is read (it may start after the widget was made).

        Sends the rows new since the last call (a ``node_samples`` message). When columns were
        added (new nodes answered: the cluster's ``version`` grew) it first sends the columns,
        the nodes and the history again, in one update; rows already sent stay valid (the new
        columns are missing in them), so the cursor keeps its place, except the first time,
        when the history covers what came before. ``details``: the nodes and the status line
        too (the nodes' ``last_seen`` moves with every answer); ``history``: the history too.
        """
        cluster = self._data.cluster
        if cluster is None:
            return
        with self._lock:
            version = cluster.version
            if version != self._node_version:
                first = self._node_version is None
                cursor = cluster.cursor  # before the window: rows it holds may come twice,
                columns = cluster.columns  # and the browser skips those, but none is missed
                packed = _node_history(cluster, columns)
                with self.widget.hold_sync():
                    self.widget.node_columns = describe_columns(columns)
                    self.widget.nodes = node_rows(cluster)
                    self.widget.node_history = packed
                    self.widget.cluster_status = cluster_status(cluster.state)
                self._node_version, self._node_width = version, len(columns)
                if first:
                    self._node_cursor = cursor
            else:
                if history:
                    self.widget.node_history = _node_history(cluster, cluster.columns)
                if details:
                    with self.widget.hold_sync():
                        self.widget.nodes = node_rows(cluster)
                        self.widget.cluster_status = cluster_status(cluster.state)
            self._send_node_rows(cluster)

    def _send_node_rows(self, cluster: Cluster) -> None:
        chunk = cluster.since(self._node_cursor)
        if chunk.end <= chunk.start or chunk.values.shape[1] != self._node_width:
            return  # nothing new, or rows of columns not sent yet: the next call sends them
        header, buffers = _chunk_message("node_samples", chunk, version=self._node_version)
        self.widget.send(header, buffers=buffers)
        self._node_cursor = chunk.end
        self.node_messages_sent += 1

    def running_changed(self) -> None:
        """A cell began (main thread): it shows as running, growing, until the ledger has it;
        the sampler's thread sends it at its next tick."""
        if not self.main_thread_now():
            self._cells_due = True
            return
        running = running_row(self._data)
        with self._lock:
            self.widget.running = running

    def ledger_changed(self) -> None:
        """After a cell or a mark (main thread): the ledger and marks as the widget shows them,
        sent by the sampler's thread at its next tick.

        Where the front end drops other threads' messages (``main_thread_sends``), the main
        thread sends them now, after the samples so far: then that front end hears of the rows
        it missed and asks for them (``resend``). The history snapshot (for views opened or
        pages reloaded later) is refreshed after cells, not while they run, and at most every
        HISTORY_EVERY seconds: live views never need it.
        """
        self._history_due = True
        if not self.main_thread_now():
            self._cells_due = True
            return
        self.send_new(after_cell=True)
        self._publish_ledger()
        self.refresh_history()
        now = time.monotonic()
        # no tick has published it for a while: a sampler stopped, or in a stuck call
        if self._stalled(now) or now >= self._next_status + STATUS_EVERY:
            self._next_status = now + STATUS_EVERY
            self._publish_status()

    def main_thread_now(self) -> bool:
        """Whether the main thread publishes what a cell's start or end changed: where the front
        end drops other threads' messages, and while no tick has published for a while (a
        sampler stopped, or in a driver call that does not return: the status line says so)."""
        return self.main_thread_sends or self._stalled(time.monotonic())

    def _stalled(self, now: float) -> bool:
        """Whether the sampler has not ticked for a while (its thread stopped, or stuck)."""
        return now - self._ticked > self._stall_after

    def _publish_all_cells(self) -> None:
        """The whole ledger as the ``cells`` trait: the state a view starts from."""
        records = self._data.records
        with self._lock:
            self.widget.cells = [cell_row(r) for r in records]
            self._newest_row = records[-1].index if records else -1
            self._rows, self._rows_json = [], []

    def _publish_ledger(self) -> None:
        """The records new since the last call as a ``cells`` message (a row each), then the
        marks and the running cell as one update.

        The ``cells`` trait's list gets the same rows in place, without being sent again
        (traitlets sees no change): a page loaded later asks for the widget's state and gets the
        whole ledger, while a new cell costs the wire its own row, not the ledger's 10,000.
        """
        with self._lock:  # (both threads publish: each row once, in order)
            first, _left = self._make_rows()
            rows, self._rows = self._rows, []
            buffers, self._rows_json = self._rows_json, []
            marks = [{"time": t, "label": label} for t, label in self._data.marks]
            running = running_row(self._data)
            held = self.widget.cells
            held.extend(rows)
            dropped = 0  # what the ledger let go of (it keeps GPUMon.history records)
            while dropped < len(held) and held[dropped].get("index", first) < first:
                dropped += 1
            del held[:dropped]
            if rows or dropped:
                self.widget.send(*cells_message(first, buffers, len(rows)))
            # after the row: a cell that ended leaves `running` once the browser has its row
            with self.widget.hold_sync():
                self.widget.marks = marks
                self.widget.running = running

    def _make_rows(self, at_most: int | None = None) -> tuple[int, bool]:
        """The rows of the records new since the last call (``at_most`` of them), kept to send
        (under the lock); returns the ledger's first index now, and whether rows were left."""
        first, new = self._data.records_after(self._newest_row)
        left = at_most is not None and len(new) > at_most
        if left:
            new = new[:at_most]
        if new:
            rows = [cell_row(r) for r in new]
            # they join the trait's list in place (no assignment for traitlets to validate)
            GPUMonWidget.cells.check_rows(self.widget, rows)
            self._rows += rows
            self._rows_json.append(rows_json(rows))
            self._newest_row = new[-1].index
        return first, left

    def _publish_status(self) -> None:
        status = self._data.status()
        devices = describe_devices(self._data.devices)  # CUDA's numbering can change: below
        with self._lock:
            self.widget.status = status_line(status)
            self.widget.interval = status.interval
            # (a quiet sampler ticks every idle interval: no stall)
            idle = status.live.sampler.idle_interval if status.live is not None else 0.0
            self._stall_after = max(STALLED_AFTER, 3 * status.interval, 2 * idle)
            # torch's first read maps the devices by UUID, after the widget was made
            if devices != self.widget.devices:
                self.widget.devices = devices

    def _history_now(self) -> dict[str, Any]:
        """The ``history`` and ``history_cursor`` of the timeline now, for a page's whole state."""
        cursor = self._data.cursor  # before the window: rows the history holds may be resent
        return {
            "history": pack_history(self._data.window().downsample(HISTORY_ROWS)),
            "history_cursor": cursor,
        }

    def refresh_history(self, force: bool = False) -> None:
        """Replace the history snapshot (main thread), unless one was sent very recently."""
        now = time.monotonic()
        if not force and now < self._next_history:
            return
        self._next_history = now + HISTORY_EVERY
        fresh = self._history_now()
        with self._lock, self.widget.hold_sync():
            self.widget.history = fresh["history"]
            self.widget.history_cursor = fresh["history_cursor"]
        self.sync_cluster(details=True, history=True)

    def close(self) -> None:
        self.widget._fresh_history = None
        self._unsubscribe()
        with self._lock:
            self.widget.detach()


def _chunk_message(kind: str, chunk: Chunk, **extra: Any) -> tuple[dict, list[bytes]]:
    """A ``samples`` or ``node_samples`` message (docs/widget-protocol.md): its header, and
    the rows' times (float64) and values (float32, row-major) as its two binary buffers."""
    header = {
        "type": kind,
        "start": chunk.start,
        "rows": chunk.end - chunk.start,
        "width": chunk.values.shape[1],
        **extra,
        "gap": chunk.gap,
    }
    return header, [chunk.times.astype("<f8").tobytes(), chunk.values.astype("<f4").tobytes()]


def cell_row(r: CellRecord) -> dict[str, Any]:
    """One ledger record as the widget's ``cells`` trait holds it."""
    peak, peak_exact, kept = shown_peak_and_kept(r)
    return {
        "index": r.index, "name": r.name, "count": r.execution_count, "kind": r.kind,
        "label": r.label,
        "start": r.start, "end": r.start + r.duration, "duration": r.duration,
        "status": r.status, "alloc": r.allocated_total, "peak": peak,
        "peak_exact": peak_exact, "kept": kept, "util_mean": r.util_mean,
        "util_max": r.util_max, "host_delta": r.rss_delta, "summary": summary_line(r),
        "held_by": retention_text(r.retention) if r.retention is not None else "",
        "frameworks": [
            {"label": f.label, "peak": f.peak, "peak_exact": f.peak_exact, "kept": f.kept}
            for f in framework_figures(r)
        ],
        "frameworks_named": len(r.frameworks) > 1,  # several up: the table names each one
        "children": children_text(r.children),  # "python train.py ≥3.0 GiB on gpu0, 87%"
        # its memory by kind at its end, and what its peak held beyond (the chart's "by kind")
        "kinds": [
            {"gpu": d.index, "kind": kind, "bytes": size}
            for d in r.devices
            for kind, size in d.peak_by_kind.items()
        ],
        "kinds_text": kinds_words(r),
    }  # fmt: skip


def running_row(data: SessionData) -> dict[str, Any]:
    """The cell being measured now as the ``running`` trait holds it, {} between cells.

    ``baseline`` holds the readings at its start by timeline column (allocator bytes, NVML
    used bytes, host RSS), so the front end shows what it changed so far from the samples it
    streams, without asking the kernel while the cell keeps it busy.
    """
    cell = data.running()
    if cell is None:
        return {}
    return {
        "name": cell.name, "count": cell.count, "kind": cell.kind, "label": cell.label,
        "start": cell.start, "baseline": dict(cell.baseline),
    }  # fmt: skip


_GPU_FIELDS = ("gpu", "model", "uuid", "pod", "namespace", "origin", "mig_profile")


def node_rows(cluster: Cluster) -> list[dict[str, Any]]:
    """The hosts that answered as the ``nodes`` trait holds them."""
    return [
        {
            "host": n.host,
            "last_seen": n.last_seen,
            "gpus": [{name: getattr(g, name) for name in _GPU_FIELDS} for g in n.gpus],
        }
        for n in cluster.nodes()
    ]


def _node_history(cluster: Cluster, columns: tuple[str, ...]) -> bytes:
    # exactly these columns, so the snapshot's width is that of the columns sent with it
    return pack_history(cluster.window(columns=columns).downsample(NODE_HISTORY_ROWS))


def pack_history(window: Window) -> bytes:
    """The ``history`` trait's format: uint32 rows, uint32 width, times, means, lows, highs."""
    rows, width = window.mean.shape if window.mean.ndim == 2 else (0, 0)
    if rows == 0:
        return b""
    return b"".join([
        struct.pack("<II", rows, width),
        window.times.astype("<f8").tobytes(),
        window.mean.astype("<f4").tobytes(),
        window.low.astype("<f4").tobytes(),
        window.high.astype("<f4").tobytes(),
    ])  # fmt: skip


def static_svg(data: SessionData, seconds: float = 600.0) -> str:
    """The last ``seconds`` of the timeline with the cells and marks in it, as an SVG picture."""
    latest = data.latest()
    end = latest["time"] if latest else time.time()
    window = data.window(end - seconds, end).downsample(600)
    bands = [
        (r.start, r.start + r.duration, r.name)
        for r in data.records
        if r.kind == "cell" and r.start + r.duration >= end - seconds
    ]
    marks = [(t, label) for t, label in data.marks if t >= end - seconds]
    return timeline_svg(window, data.columns, data.devices, bands, marks=marks)


def describe_devices(devices: Sequence[Device]) -> list[dict]:
    """The widget's ``devices``: each GPU's NVML index, name, total memory, CUDA index and how the
    chart names the kernel's view of it (``cuda:0``, or ``not visible to this kernel``). Its words
    are made in Python so that the chart says what the text views say. A MIG device also has its
    profile and GPU instance (its name and memory are the MIG device's). Each also lists the NVML
    metrics it cannot give (``unavailable``), which the chart then draws no line for."""
    return [
        {
            "index": d.index,
            "name": d.name,
            "memory_total": d.memory_total,
            "cuda_index": d.cuda_index,
            "cuda_label": d.cuda_label,
            **({"unavailable": list(d.unavailable)} if d.unavailable else {}),
            **(
                {"mig_profile": d.mig.profile, "gpu_instance": d.mig.gpu_instance}
                if d.mig is not None
                else {}
            ),
        }
        for d in devices
    ]


def plain_summary(data: SessionData) -> str:
    """What a terminal shows for the widget: the devices now and the newest cells."""
    latest = data.latest() or {}
    lines = [f"nbgpumon live chart ({status_line(data.status())})"]
    for d in data.devices:
        used = next(  # the device source's figure, whichever source it is
            (
                v
                for c, v in latest.items()
                if device_of(c) == d.index and device_role(c) == "mem_used"
            ),
            None,
        )
        lines.append(f"{d.label}: {format_bytes(used)} used of {format_bytes(d.memory_total)}")
    lines += [summary_line(r) for r in list(data.records)[-5:]]
    return "\n".join(lines)
