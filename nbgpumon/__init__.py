"""nbgpumon shows what the GPU is doing while a notebook cell runs, and which cell took the memory.

In IPython/Jupyter: ``%load_ext nbgpumon``, then ``%gpumon``. From Python: :func:`monitor`,
:func:`cells`, :func:`cells_frame`, :func:`mark`, :func:`track`, :func:`holders`,
:func:`explain`, :func:`free`, :func:`fit`, :func:`load`, :func:`compare`, :func:`serve`.

This module is the public API and re-exports nothing else; everything under a ``_`` name is
internal (the layers are described in docs/architecture.md).
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any

from ._api import current as _current
from ._api import exporter as _exporter
from ._api.monitor import Monitor
from ._foundation.errors import RecordingError, RecordingNotFound, UsageError
from ._foundation.forwarding import forwards_to as _forwards_to
from ._foundation.version import __version__
from ._ipython.shell import current_shell as _current_shell
from ._ledger.records import CellRecord, DeviceUsage
from ._session.analysis.fit_arguments import FitArguments as _FitArguments
from ._session.analysis.whatif_arguments import WhatifArguments as _WhatifArguments
from ._session.config import GPUMon
from ._session.region import Region
from ._sources import frameworks as _frameworks  # noqa: F401  (registers the built-in plug-ins first)

if TYPE_CHECKING:
    import pandas

    from ._api.compare import Comparison
    from ._api.explain import CellExplanation, Explanation
    from ._api.recorded import Recorded
    from ._forensics.holder_scan import HolderScan
    from ._views.reprs.fit_result import FitResult
    from ._views.reprs.whatif_result import WhatifResult

# Reading recordings (numpy, SQLite) and scanning holders are imported on first use, so that
# ``%load_ext nbgpumon`` does not wait for them; ``nbgpumon.Recorded`` and
# ``nbgpumon.HolderScan`` still name the classes (:func:`__getattr__`).
_LAZY = {
    "Recorded": ("._api.recorded", "Recorded"),
    "Comparison": ("._api.compare", "Comparison"),
    "Explanation": ("._api.explain", "Explanation"),
    "CellExplanation": ("._api.explain", "CellExplanation"),
    "CellExplained": ("._forensics.explain", "CellExplained"),
    "MemoryExplained": ("._forensics.explain", "MemoryExplained"),
    "HolderScan": ("._forensics.holder_scan", "HolderScan"),
    "FitResult": ("._views.reprs.fit_result", "FitResult"),
    "WhatifResult": ("._views.reprs.whatif_result", "WhatifResult"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'nbgpumon' has no attribute {name!r}")
    import importlib

    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module, __name__), attribute)
    globals()[name] = value  # found by the next lookup without coming here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "CellExplained",
    "CellExplanation",
    "CellRecord",
    "Comparison",
    "DeviceUsage",
    "Explanation",
    "FitResult",
    "GPUMon",
    "HolderScan",
    "MemoryExplained",
    "Monitor",
    "Recorded",
    "RecordingError",
    "RecordingNotFound",
    "Region",
    "UsageError",
    "WhatifResult",
    "__version__",
    "cells",
    "cells_frame",
    "compare",
    "explain",
    "fit",
    "free",
    "holders",
    "load",
    "mark",
    "monitor",
    "serve",
    "sessions",
    "track",
    "whatif",
]


def monitor() -> Monitor:
    """This process's monitor, started on first use (also outside IPython)."""
    return _current.started(shell=_current_shell)


def cells() -> list[CellRecord]:
    """Every recorded cell and region, oldest first."""
    return monitor().cells()


def cells_frame() -> pandas.DataFrame:
    """The ledger as a pandas DataFrame."""
    return monitor().cells_frame()


def mark(label: str) -> None:
    """Label this instant on the timeline."""
    monitor().mark(label)


def holders(device: str | None = None) -> HolderScan:
    """What holds GPU memory now (host memory without CUDA), biggest first: your variables,
    ``Out[N]``, ``_``, and the frames of stored tracebacks. ``device``: cuda, cuda:N or host."""
    return monitor().holders(device)  # a HolderReport: the scan, which prints as its words


def explain(cell: int | None = None) -> Explanation | CellExplanation:
    """This kernel's GPU memory now, one entry per GPU, by what it is: ``.categories`` (name →
    bytes, in a stable order) adding up to ``.total``, the driver's figure for this process.
    Prints as the breakdown; in a notebook, a stacked bar per GPU too.

    ``cell=N``: cell N's instead (its newest run), at its end (``.categories``, ``.total``,
    ``.kept``: by kind since its start) and at its peak (``.peak_categories``: what stayed,
    and the activations and temporaries, adding up to ``.peak``)."""
    return monitor().explain(cell)


def free() -> str:
    """Drop what IPython's hidden references hold (outputs holding tensors or arrays, ``_``,
    stored tracebacks), collect garbage, empty torch's cache; your variables stay. Returns what
    came back, as one line."""
    return monitor().free()


@_forwards_to(_FitArguments)
def fit(*args: Any, **kwargs: Any) -> FitResult:
    """Will it fit? Run ``step(size)`` for each of ``sizes`` (smallest first) as a tracked
    region, fit each kind of memory's peak growth (each framework's allocator per GPU, and
    host memory) as ``intercept + slope × size`` by least squares, and predict the largest
    size whose peak stays under ``limit`` less ``margin``.

    ``limit``: bytes (or "40GiB") the step may grow by, or a dict by kind ("torch", "host");
    by default what each kind could take now: the GPU's free memory (NVML) plus the
    framework's idle cache, within torch's ``set_per_process_memory_fraction`` cap or JAX's or
    CuPy's pool limit; for host memory, the machine's available memory. ``margin``: bytes kept
    back; by default max(5%, 256 MiB) of a GPU limit, 5% of host memory. ``warmup``: one
    unmeasured call at the smallest size first (compilation, workspaces, gradients). A size that
    runs out of memory stops the run and bounds the prediction; any other error propagates.

    A prediction needs 3 sizes that ran, a good line (R² ≥ 0.98, no point more than 5% of the
    largest peak off it) and memory that grows with size; otherwise the result says why.
    Returns a :class:`FitResult`, whose repr is a short table (what the notebook shows)."""
    return monitor().fit(*args, **kwargs)


@_forwards_to(_WhatifArguments)
def whatif(*args: Any, **kwargs: Any) -> WhatifResult:
    """What would each fix save on this step? Run ``step`` once to warm up, once as it is
    (the baseline), then once under each fix, each run a tracked region in the ledger
    (``whatif amp``), and show each fix's exact peak allocated on the step's GPU (every
    framework together) and its time, against the baseline's.

    ``step``: a function of no argument, or of the batch size where ``size=N`` is given (as
    ``fit`` calls it). ``fixes``: names, by default every fix of the framework's that applies:
    ``amp`` (autocast; bf16 where the GPU has it, else fp16), ``checkpointing`` (the model's
    own switch, else each block of its largest ModuleList or Sequential), ``no_grad``
    (inference mode, for a step that calls no backward), ``expandable_segments`` (the
    allocator's setting), ``foreach=False``, ``fused=True`` (the optimizer's options), and
    ``accumulate=K`` (the step at ``size // K``: its peak one micro-batch's, its time K of
    them; needs ``size``). ``model``: the module the fixes work on; by default the
    namespace's module of the most parameters (the result names it).

    The model's weights, buffers and gradients, its optimizers' and scheduler's state, the
    random generators and grad mode are copied to the host first and put back after each run,
    also one that raises or runs out of memory (``restore=False`` skips the copy, for a
    model too big to copy: the runs then change it). Returns a :class:`WhatifResult`:
    ``.baseline`` and ``.rows``, each with ``.fix``, ``.applied``, ``.peak`` (bytes),
    ``.seconds`` and ``.note``."""
    return monitor().whatif(*args, **kwargs)


def load(path: str, session: int | None = None) -> Recorded:
    """A recording made with ``%gpumon record PATH``: ``samples_frame()``, ``cells_frame()``,
    ``report_html()``, ``export(DIR, "csv"|"parquet")``. The newest session unless ``session``
    names one (``nbgpumon.sessions(PATH)`` lists them).

    Raises :class:`RecordingError` (one line: the file and what is wrong) for a file that is
    not a recording or is damaged; :class:`RecordingNotFound` when nothing is at ``path``. A
    file cut short loads as far as it goes, with a warning of what was lost (also in
    ``.damage``). The file is only read."""
    from ._api.recorded import load_recorded

    recorded = load_recorded(path, session)
    if recorded.damage:
        warnings.warn(recorded.damage, RuntimeWarning, stacklevel=2)
    return recorded


def compare(
    a: str | os.PathLike[str] | Recorded | Monitor,
    b: str | os.PathLike[str] | Recorded | Monitor | None = None,
    *,
    memory_ratio: float = 0.10,
    memory_bytes: int = 64 * 2**20,
    duration_ratio: float = 0.25,
    duration_seconds: float = 1.0,
    similar: float = 0.6,
) -> Comparison:
    """Run ``b`` against run ``a``, cell by cell. Each is a recording's path (its newest
    session), ``load(PATH)`` or ``monitor()``; ``b`` None: this kernel's live monitor.

    Cells pair by source (repeats in order), then edited cells by the closest source (difflib
    ratio ≥ ``similar``), in run order; recordings older than schema 4 pair by first line.
    A pair is a regression when B's peak or kept memory (host or GPU) grew by more than
    ``memory_ratio`` and by at least ``memory_bytes``, its time by more than
    ``duration_ratio`` and at least ``duration_seconds``, or it failed where A passed.
    Returns a :class:`Comparison`: ``frame()``, ``regressions``, ``only_in_a``,
    ``only_in_b``, ``report()``, ``report_html()``; its repr is the table."""
    from ._api.compare import compare as compared
    from ._session.analysis.comparison import Thresholds

    limits = Thresholds(memory_ratio, memory_bytes, duration_ratio, duration_seconds)
    return compared(a, b, _current.current(), limits, similar)


def sessions(path: str | os.PathLike[str]) -> list[int]:
    """The ids of the sessions recorded in the file at ``path``, oldest first (for
    ``load(path, session=N)``)."""
    from ._recording.reader import sessions as recorded_sessions

    return recorded_sessions(path)


def serve(port: int | None = None, host: str | None = None) -> str:
    """Serve this process's metrics for Prometheus at ``http://HOST:PORT/metrics``, starting the
    monitor if needed (also outside IPython). They are NVML's per-GPU figures, each framework's
    allocator in this process, host memory and the cells. ``port``: 9476 unless given; in a job
    launched by torchrun (LOCAL_RANK set), ``port + LOCAL_RANK``, so that the ranks of a node each
    serve their own. ``host``: ``GPUMon.export_host`` (127.0.0.1) unless given. Returns one line; a
    port in use raises :class:`UsageError`. ``monitor().export(None)`` stops it."""
    mon = monitor()
    if port is None and host is None and mon.exporter_line:
        return f"exporting on {mon.exporter_line}"  # already serving (a second call)
    chosen, note = _exporter.rank_port(_exporter.DEFAULT_PORT if port is None else port)
    line = mon.export(chosen, host, retry="serve(port=PORT) picks another")
    return f"{line} ({note})" if note else line


def track(label: str) -> Region:
    """Record a region of a cell like a cell: ``with nbgpumon.track("epoch 3"): ...``."""
    return monitor().track(label)


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext nbgpumon`` starts the sampler, hooks the cells and adds ``%gpumon``."""
    from ._ipython.extension import load  # IPython is imported here, not by `import nbgpumon`

    load(ip)


def unload_ipython_extension(ip: Any) -> None:
    """``%unload_ext nbgpumon`` stops the thread and removes every hook."""
    from ._ipython.extension import unload

    unload(ip)
