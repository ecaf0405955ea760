"""The one place that talks to NVML's Python binding (``pynvml`` from nvidia-ml-py).

Every call goes through :meth:`NvmlLibrary.query`, which turns an ``NVMLError`` into the
sentinel ``NA`` plus a remembered reason, so callers above this file never see an NVML
exception. The fast tick's calls go to NVML without releasing the GIL (``held_calls``
says which and why); the others through the binding, which releases it. A metric that
answers NotSupported on a device is disabled for that device; a function missing from the
driver is noted once; a lost GPU marks the device lost.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
import threading
import time
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .held_calls import (
    SLOW_CALL_NS,
    STUCK_CALL_NS,
    DeviceReads,
    fast_tick_functions,
    gil_keeping_functions,
)

NA: Any = None  # the value of a reading NVML could not give
# A kept call given back its GIL release for running slow is kept again this long after (a busy
# spell passes), the wait doubled each time it is given back again, up to KEEP_AGAIN_MAX.
KEEP_AGAIN_AFTER = 60.0
KEEP_AGAIN_MAX = 3600.0
# the binding's names of what DeviceReads calls, by the metric each reads
_HELD_FUNCTIONS = {
    "memory_v2": "nvmlDeviceGetMemoryInfo",
    "utilization": "nvmlDeviceGetUtilizationRates",
}

# NVML return codes (stable across driver versions; the binding exports the same numbers).
_NOT_SUPPORTED = 3
_NO_PERMISSION = 4
_FUNCTION_NOT_FOUND = 13
_GPU_IS_LOST = 15
_GPU_NOT_FOUND = 28
_ARGUMENT_VERSION_MISMATCH = 25  # a versioned struct this driver doesn't know

_PERMANENT = {  # errors that will not change on retry: the metric is off for that device
    _NOT_SUPPORTED: "not supported",
    _NO_PERMISSION: "no permission",
    _ARGUMENT_VERSION_MISMATCH: "not in this driver's version",
}


def shadowing_note() -> str | None:
    """What to do when the deprecated ``pynvml`` distribution ships the ``pynvml`` module.

    Asked by status, not at start: importing importlib.metadata alone costs ~30 ms. Searched
    once per ``sys.path``: the live chart's status line reads status every 2 s, and the
    search reads every folder on it.
    """
    return _shadowing_note(tuple(sys.path))


@functools.lru_cache(maxsize=4)
def _shadowing_note(_path: tuple[str, ...]) -> str | None:
    import importlib.metadata

    try:
        files = importlib.metadata.distribution("pynvml").files or []
    except Exception:  # not installed, or broken metadata: nothing to report
        return None
    if not any(str(f) == "pynvml.py" or str(f).startswith("pynvml/") for f in files):
        return None
    return (
        "the deprecated 'pynvml' distribution provides the pynvml module; "
        "pip uninstall pynvml && pip install --force-reinstall nvidia-ml-py"
    )


class NvmlLibrary:
    """NVML loaded and initialised once, with calls that never raise.

    ``module`` replaces the ``pynvml`` import (tests pass a fake at this boundary).
    """

    def __init__(self, module: ModuleType | None = None) -> None:
        self._module = module
        self.available = False
        self.reason = ""  # why NVML is unavailable, for status
        self.notes: list[str] = []  # things worth telling once (missing functions, shadowing)
        self.driver_version: str | None = None
        self._disabled: dict[tuple[int, str], str] = {}  # (device, metric) -> reason
        self._missing_functions: set[str] = set()
        self.lost_devices: set[int] = set()
        self._lock = threading.Lock()  # guards the dicts above; NVML itself is thread-safe
        self._calls = 0  # NVML calls made through query and call_first
        self._gil_kept = 0  # ... of which kept the GIL
        self._held = [0]  # calls DeviceReads made (all keep the GIL), counted by them
        # the binding's functions by name, where a GIL-keeping one replaces the binding's own
        self._gil_keeping: dict[str, Callable[..., Any]] = {}
        self._fast_tick: tuple[Any, Any] | None = None  # the C functions DeviceReads call
        # kept calls given back their GIL release for a while: name -> (the kept function,
        # monotonic time it is kept again); the next wait and the spells, by name
        self._given_back: dict[str, tuple[Callable[..., Any], float]] = {}
        self._next_wait: dict[str, float] = {}
        self._slow_spells: dict[str, int] = {}
        self._note_of: dict[str, int] = {}  # a function's note's place in notes (replaced)
        # counts what changes which calls a device's fast tick may make (a metric disabled, a
        # GPU lost, a function given back its GIL release): a DeviceReads made before is stale
        self.changes = 0

    # -- life cycle ---------------------------------------------------------------------
    def init(self) -> bool:
        """Load and initialise NVML; on failure record why and return False."""
        nvml = self._module
        if nvml is None:
            try:
                with warnings.catch_warnings():
                    # the deprecated pynvml shim warns on import; we report it in status instead
                    warnings.simplefilter("ignore")
                    nvml = importlib.import_module("pynvml")
            except Exception as exc:
                self.reason = (
                    f"the NVML Python binding is not importable ({type(exc).__name__}); "
                    "pip install nvidia-ml-py"
                )
                return False
        self._module = nvml
        try:
            init = getattr(nvml, "nvmlInit_v2", None) or nvml.nvmlInit
            init()
        except Exception as exc:
            self.reason = f"NVML could not start: {self._describe(exc)} (no NVIDIA driver?)"
            return False
        self.available = True
        self._gil_keeping = gil_keeping_functions(nvml, self._release_gil_for)
        self._fast_tick = fast_tick_functions(nvml)
        version = self.query("nvmlSystemGetDriverVersion")
        self.driver_version = _text(version)
        return True

    def shutdown(self) -> None:
        """Release NVML; safe to call when it never started."""
        if self.available:
            self.available = False
            with contextlib.suppress(Exception):
                self._module.nvmlShutdown()

    @property
    def binding_version(self) -> str | None:
        """The binding's version, looked up when first asked (metadata reads cost milliseconds,
        and the live chart's status line asks every 2 s, on the sampler's thread)."""
        version = getattr(self._module, "__version__", None)
        return version or _distribution_version("nvidia-ml-py")

    @property
    def module(self) -> ModuleType:
        return self._module

    @property
    def calls(self) -> int:
        """NVML calls made, all of them."""
        return self._calls + self._held[0]

    @property
    def gil_kept_calls(self) -> int:
        """... of which kept the GIL (held_calls says which, and why)."""
        return self._gil_kept + self._held[0]

    @property
    def gil_kept(self) -> tuple[str, ...]:
        """The NVML functions called without releasing the GIL (the fast tick's)."""
        return tuple(self._gil_keeping)

    # -- the fast tick's calls -----------------------------------------------------------
    def device_reads(self, device: int, handle: Any, version: int) -> DeviceReads | None:
        """``device``'s memory (v2, ``version``) and utilization calls bound once, or None
        where they must go through :meth:`query`: no GIL-keeping functions, either metric
        disabled on it, the GPU lost. Made again when :attr:`changes` moves."""
        kept = self._gil_keeping
        if (
            not self.available
            or self._fast_tick is None
            or "nvmlDeviceGetMemoryInfo" not in kept
            or "nvmlDeviceGetUtilizationRates" not in kept
            or device in self.lost_devices
            or (device, "memory_v2") in self._disabled
            or (device, "utilization") in self._disabled
        ):
            return None
        return DeviceReads(self._fast_tick, handle, version, self._held, self._held_too_slow)

    def _held_too_slow(self, stuck: bool) -> None:
        """The bound calls ran slow too often: both go back to the binding's, which release
        the GIL (held_calls says why)."""
        self._release_gil_for("nvmlDeviceGetMemoryInfo", stuck)
        self._release_gil_for("nvmlDeviceGetUtilizationRates", stuck)

    def retry_kept_calls(self, now: float | None = None) -> None:
        """Keep the GIL again in the calls given it back for a slow spell whose wait is over
        (the slow cadence asks: a dict's truth most times)."""
        if not self._given_back:
            return
        now = time.monotonic() if now is None else now
        with self._lock:
            for function, (kept, due) in list(self._given_back.items()):
                if now < due:
                    continue
                del self._given_back[function]
                self._gil_keeping[function] = kept
                self.changes += 1
                spells = self._slow_spells[function]
                self._set_note(
                    function,
                    f"{function} took over {SLOW_CALL_NS / 1e6:g} ms on this driver "
                    f"({spells} slow spell{'s' if spells > 1 else ''}): called releasing the "
                    "GIL for a while, now kept again",
                )

    def held_call_failed(self, reads: DeviceReads, code: int, device: int) -> None:
        """Record a failed held call as :meth:`query` records one (a metric disabled, a GPU
        lost), so that it is asked once, not again through query."""
        function = _HELD_FUNCTIONS[reads.failed]
        error = getattr(self._module, "NVMLError", None)
        exc = error(code) if error is not None else RuntimeError(code)
        self._record_failure(exc, function, device, reads.failed)

    # -- calls ----------------------------------------------------------------------------
    def query(
        self,
        function: str,
        *args: Any,
        device: int | None = None,
        metric: str | None = None,
        release_gil: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Call ``pynvml.<function>(*args)``; return its value or ``NA``.

        ``device``/``metric`` name what the call reads, so that NotSupported disables that
        metric on that device and a lost GPU marks that device. ``release_gil``: through the
        binding even where a GIL-keeping function exists (a call that may be made while the
        main thread waits for it, with a deadline: it must be able to run meanwhile).
        """
        if not self.available:
            return NA
        if metric is not None and (device, metric) in self._disabled:
            return NA
        if device is not None and device in self.lost_devices:
            return NA
        fn: Callable[..., Any] | None = None if release_gil else self._gil_keeping.get(function)
        if fn is not None:
            self._gil_kept += 1
        else:
            fn = getattr(self._module, function, None)
            if fn is None:
                self._note_missing(function)
                return NA
        self._calls += 1
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            self._record_failure(exc, function, device, metric)
            return NA

    def probe(self, function: str, *args: Any) -> Any:
        """Ask whether this machine has a feature (MIG): ``pynvml.<function>(*args)`` or
        ``NA``, and nothing remembered either way. A GPU or driver without the feature
        answers NotSupported or lacks the function: that is an answer, not a fault to report."""
        fn = getattr(self._module, function, None) if self.available else None
        if fn is None:
            return NA
        self._calls += 1
        try:
            return fn(*args)
        except Exception:
            return NA

    def call_first(
        self,
        functions: tuple[str, ...],
        *args: Any,
        device: int | None = None,
        metric: str | None = None,
    ) -> Any:
        """Try versioned functions newest first (``_v3``, ``_v2``, plain); remember the winner."""
        for name in functions:
            if name in self._missing_functions:
                continue
            fn = getattr(self._module, name, None) if self.available else None
            if fn is None:
                self._missing_functions.add(name)
                continue
            self._calls += 1
            try:
                return fn(*args)
            except Exception as exc:
                if self.error_code(exc) == _FUNCTION_NOT_FOUND:
                    self._missing_functions.add(name)
                    continue
                self._record_failure(exc, name, device, metric)
                return NA
        if metric is not None and device is not None:
            self._disable(device, metric, f"the driver has none of {', '.join(functions)}")
        return NA

    # -- what went wrong ------------------------------------------------------------------
    def disabled_metrics(self) -> dict[tuple[int, str], str]:
        with self._lock:
            return dict(self._disabled)

    def error_code(self, exc: BaseException) -> int | None:
        value = getattr(exc, "value", None)
        return value if isinstance(value, int) else None

    def _describe(self, exc: BaseException) -> str:
        code = self.error_code(exc)
        try:
            text = str(exc)
        except Exception:
            text = type(exc).__name__
        return f"{text} (NVML error {code})" if code is not None else text

    def _record_failure(
        self, exc: BaseException, function: str, device: int | None, metric: str | None
    ) -> None:
        code = self.error_code(exc)
        if code in (_GPU_IS_LOST, _GPU_NOT_FOUND) and device is not None:
            with self._lock:
                self.lost_devices.add(device)
                self.changes += 1
        elif code == _FUNCTION_NOT_FOUND:
            self._note_missing(function)
            if metric is not None and device is not None:
                self._disable(device, metric, f"{function} is not in this driver")
        elif code in _PERMANENT and metric is not None and device is not None:
            why = _PERMANENT[code]
            self._disable(device, metric, f"{why} on this device")
        # any other error is transient (timeouts, busy driver): a missing value this tick only

    def _disable(self, device: int, metric: str, reason: str) -> None:
        with self._lock:
            self._disabled[(device, metric)] = reason
            self.changes += 1

    def _release_gil_for(self, function: str, stuck: bool = False) -> None:
        """A GIL-keeping call was slow too often: call the binding's own (releasing) one, for
        a while (a driver that did not answer at all: for good, as it would hold every
        thread)."""
        with self._lock:
            self.changes += 1
            kept = self._gil_keeping.pop(function, None)
            if kept is None:
                return
            if stuck:
                self._given_back.pop(function, None)
                note = (
                    f"{function} did not answer for over {STUCK_CALL_NS / 1e6:g} ms: "
                    "now called releasing the GIL"
                )
            else:
                wait = self._next_wait.get(function, KEEP_AGAIN_AFTER)
                self._next_wait[function] = min(2 * wait, KEEP_AGAIN_MAX)
                self._given_back[function] = (kept, time.monotonic() + wait)
                self._slow_spells[function] = self._slow_spells.get(function, 0) + 1
                note = (
                    f"{function} took over {SLOW_CALL_NS / 1e6:g} ms on this driver: "
                    f"now called releasing the GIL, for {wait:g} s"
                )
            self._set_note(function, note)

    def _set_note(self, key: str, note: str) -> None:
        """``note`` in notes, in the place of the last one under ``key`` (lock held)."""
        at = self._note_of.get(key)
        if at is not None and at < len(self.notes):
            self.notes[at] = note
        else:
            self._note_of[key] = len(self.notes)
            self.notes.append(note)

    def _note_missing(self, function: str) -> None:
        with self._lock:
            if function in self._missing_functions:
                return
            self._missing_functions.add(function)
            self.notes.append(f"{function} is not available in this NVML")


@functools.lru_cache(maxsize=8)  # (a package's version does not change under a running import)
def _distribution_version(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except Exception:
        return None


def _text(value: Any) -> str | None:
    if value is NA:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
