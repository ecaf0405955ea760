"""``nbgpumon.fit``: will it fit? The line through measured peaks, when it is trusted, the size
it predicts, and the whole run: on real host memory in a real kernel, outside IPython, and on a
GPU faked at the library boundary (CuPy and NVML)."""

from __future__ import annotations

import inspect
import math
import os
import pydoc
import re
import subprocess
import sys

import pytest

import nbgpumon
from nbgpumon import FitResult, Monitor, UsageError
from nbgpumon._foundation.units import parse_bytes
from nbgpumon._ledger.peak_fit import (
    GPU_MARGIN_MIN,
    BelowOutOfMemory,
    NoGrowth,
    NothingFits,
    NotStraight,
    SmallerThanTried,
    TooFewSizes,
    default_margin,
    fit_line,
    predict,
)
from nbgpumon._session.analysis import headroom as room
from nbgpumon._session.analysis.size_fit import (
    KeptAfter,
    NoWarmup,
    SampledPeaks,
    SizeRow,
    _fit_exact,
)
from nbgpumon._views.words.fit import limit_text, reason_text, reasons_text

from fake_frameworks import FakeContexts, FakeCupy
from notebook_runner import fake_pynvml, run_cells

MIB, GIB = 2**20, 2**30


def _line(a: float, b: float, sizes=(8, 16, 24, 32)) -> list[tuple[int, int]]:
    return [(s, round(a + b * s)) for s in sizes]


# -- the line -----------------------------------------------------------------------------
def test_a_perfect_line_is_found_exactly_and_trusted():
    fit = fit_line("torch", _line(10 * MIB, 128 * MIB))
    assert fit.ok and fit.why is None
    assert fit.slope == pytest.approx(128 * MIB) and fit.intercept == pytest.approx(10 * MIB)
    assert fit.r2 == pytest.approx(1.0) and fit.max_residual < 1


def test_a_slightly_noisy_line_is_still_trusted_and_its_quality_reported():
    points = [(s, p + (MIB if i % 2 else -MIB)) for i, (s, p) in enumerate(_line(0, 64 * MIB))]
    fit = fit_line("torch", points)
    assert fit.ok
    assert 0.98 < fit.r2 < 1.0
    assert fit.max_residual == pytest.approx(MIB, rel=0.5)


def test_a_curve_is_refused_as_not_a_straight_line():
    fit = fit_line("torch", [(s, s * s * MIB) for s in (8, 16, 32, 64)])  # quadratic
    assert not fit.ok and fit.grows and isinstance(fit.why, NotStraight)
    assert reason_text(fit.why).startswith("not a straight line (R² ")
    assert predict(fit, 100 * GIB, GIB, 64).size is None


def test_one_point_far_off_the_line_is_refused_even_with_a_high_r2():
    points = _line(0, 100 * MIB, sizes=(10, 20, 30, 40, 50, 60, 70, 80))
    points[3] = (40, points[3][1] + 600 * MIB)  # the line, pulled to it, stays > 5% away
    fit = fit_line("torch", points)
    assert fit.r2 > 0.98
    assert not fit.ok and fit.why.off > 0.05
    assert "a point 7% of the largest peak off it" in reason_text(fit.why)


def test_memory_that_does_not_grow_with_size_gives_no_prediction():
    flat = fit_line("host", [(s, 12 * MIB + (s % 3) * 1000) for s in (8, 16, 24, 32)])
    assert not flat.ok and not flat.grows
    assert flat.why == NoGrowth(12 * MIB, 12 * MIB + 2000)
    assert reason_text(flat.why) == "does not grow with size (peak 12.0 MiB)"
    shrinking = fit_line("torch", _line(GIB, -MIB))
    assert not shrinking.grows
    assert reason_text(shrinking.why) == "does not grow with size (peak 992 MiB to 1016 MiB)"
    assert predict(flat, GIB, 0, 32).size is None


def test_two_sizes_fit_a_line_but_are_not_trusted():
    fit = fit_line("torch", _line(0, MIB, sizes=(8, 16)))
    assert fit.slope == pytest.approx(MIB)
    assert not fit.ok and fit.why == TooFewSizes(2)
    assert reason_text(fit.why) == "2 sizes always fit a line, which checks nothing: run at least 3"
    one = fit_line("torch", [(8, MIB)]).why
    assert reason_text(one) == "1 size ran: run at least 3 to fit and check a line"
    assert reason_text(fit_line("torch", []).why) == "no size ran"


def test_the_prediction_is_the_largest_size_under_the_limit_less_the_margin():
    fit = fit_line("torch", _line(10 * MIB, 128 * MIB))
    limit = 40 * GIB
    margin = default_margin(limit, gpu=True)
    assert margin == int(0.05 * limit)
    got = predict(fit, limit, margin, largest_tried=32)
    usable = limit - margin
    assert got.size == math.floor((usable - 10 * MIB) / (128 * MIB))
    assert fit.peak_at(got.size) <= usable < fit.peak_at(got.size + 1)
    assert got.usable == usable and got.extrapolation == pytest.approx(got.size / 32)
    assert got.far and got.why == ()  # about 9× the largest size tried, and no caveat


def test_the_margin_is_at_least_256_mib_on_a_gpu_and_5_percent_of_host_memory():
    assert default_margin(GIB, gpu=True) == GPU_MARGIN_MIN
    assert default_margin(100 * GIB, gpu=True) == 5 * GIB
    assert default_margin(GIB, gpu=False) == int(0.05 * GIB)


def test_a_size_that_ran_out_bounds_the_prediction():
    fit = fit_line("torch", _line(0, MIB))
    got = predict(fit, 100 * GIB, 0, largest_tried=32, ran_out_at=48)
    assert got.size == 47 and got.why == (BelowOutOfMemory(48),)
    assert reasons_text(got.why) == "below size 48, which ran out of memory"


def test_nothing_fits_when_even_size_1_is_over_the_limit():
    fit = fit_line("torch", _line(2 * GIB, MIB))
    got = predict(fit, GIB, 0, largest_tried=32)
    assert got.size is None and got.why == (NothingFits(GIB, 2 * GIB + MIB),)
    assert reasons_text(got.why) == "not even size 1 fits under 1.0 GiB (2.0 GiB at size 1)"


def test_a_size_below_those_that_ran_and_a_missing_limit_say_so():
    fit = fit_line("torch", _line(0, MIB))
    got = predict(fit, 20 * MIB, 0, largest_tried=32, ran_out_at=24)
    assert got.size == 20 and got.why == (SmallerThanTried(),)
    assert reasons_text(got.why) == (
        "smaller than sizes that ran: less memory is free now than while they ran"
    )
    got = predict(fit, 30 * MIB, 0, largest_tried=32, ran_out_at=24)
    assert reasons_text(got.why) == (
        "below size 24, which ran out of memory; smaller than sizes that ran: less memory is "
        "free now than while they ran"
    )
    unknown = predict(fit, None, None, largest_tried=32)
    assert unknown.size is None
    assert reasons_text(unknown.why) == "no limit known: pass limit="
    assert reasons_text(unknown.why, "host memory unreadable") == (
        "no limit known (host memory unreadable): pass limit="
    )


def test_where_a_limit_came_from_is_a_fact_worded_as_the_table_shows_it():
    for headroom, words in [
        (room.Headroom(40 * GIB, room.Given()), "limit="),
        (room.Headroom(23 * GIB, room.HostAvailable()), "available 23.0 GiB"),
        (room.Headroom(None, room.HostUnreadable()), "host memory unreadable"),
        (
            room.Headroom(None, room.DeviceUnreadable("torch", 1, "NVML")),
            "torch on cuda:1 or NVML unreadable now",
        ),
        (
            room.Headroom(41 * GIB, room.FreeAndCache(40 * GIB, GIB)),
            "free 40.0 GiB + cache 1.0 GiB",
        ),
        (
            room.Headroom(7 * GIB, room.UnderCap("JAX's pool limit", 8 * GIB, GIB)),
            "JAX's pool limit 8.0 GiB - allocated 1.0 GiB",
        ),
        (None, ""),
    ]:
        assert limit_text(headroom) == words


def test_limits_are_bytes_or_amounts_with_units():
    assert parse_bytes("40GiB") == 40 * GIB
    assert parse_bytes("1.5 GB") == 1_500_000_000
    assert parse_bytes(" 512 mib") == 512 * MIB
    assert parse_bytes(4096) == 4096
    for bad in ("40 GiBs", "-1GiB", "", "lots", True, -5):
        with pytest.raises(ValueError):
            parse_bytes(bad)


# -- the run, with a GPU faked at the library boundary --------------------------------------
@pytest.fixture
def cupy_gpu(monkeypatch):
    """A monitor on one fake 141 GiB GPU with CuPy's pool on it and its peak hook armed."""
    nvml = fake_pynvml(devices=[{"name": "Fake H200", "used": 3 * GIB, "total": 141 * GIB}])
    mon = Monitor(nvml_module=nvml)
    cupy = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    mon._session.allocator("cupy")._contexts = FakeContexts({0})
    mon.config.cupy_peak_hook = True
    try:
        yield mon, cupy
    finally:
        mon.close()


class OutOfMemoryError(RuntimeError):
    """Named as torch's and CuPy's are: what ``fit`` takes for running out of memory."""


def test_fit_measures_each_size_and_predicts_within_free_memory_and_the_idle_cache(cupy_gpu):
    mon, cupy = cupy_gpu
    calls = []

    def step(n: int) -> None:
        calls.append(n)
        cupy.malloc(0, 64 * MIB + n * 32 * MIB)
        cupy.free(0, 64 * MIB + n * 32 * MIB)

    result = mon.fit(step, sizes=(64, 16, 48, 32))
    assert isinstance(result, FitResult)
    assert calls == [16, 16, 32, 48, 64]  # a warm-up call, then smallest first
    assert [r.size for r in result.table] == [16, 32, 48, 64]
    assert [r.peaks["cupy"] for r in result.table] == [
        64 * MIB + n * 32 * MIB for n in (16, 32, 48, 64)
    ]
    assert all(r.exact["cupy"] for r in result.table)
    fit = result.fits["cupy"]
    assert (
        fit.ok and fit.slope == pytest.approx(32 * MIB) and fit.intercept == pytest.approx(64 * MIB)
    )
    prediction = result.prediction["cupy"]
    free = (141 - 3) * GIB - 512 * MIB  # NVML total - used - reserved
    idle = 64 * MIB + 64 * 32 * MIB  # the pool keeps the largest block cached
    assert prediction.limit == free + idle
    assert prediction.margin == int(0.05 * (free + idle))
    assert prediction.size == math.floor((free + idle - prediction.margin - 64 * MIB) / (32 * MIB))
    assert result.size == prediction.size  # host memory does not grow with size here
    assert [r.label for r in mon.cells()] == [f"fit size={n}" for n in (16, 32, 48, 64)]
    text = repr(result)
    assert text.splitlines()[0] == (
        "nbgpumon.fit: peak growth of step(size), 4 sizes, after a warm-up call at size 16"
    )
    assert f"fits up to size {prediction.size} under" in text
    assert "(free 138 GiB + cache 2.1 GiB - margin 7.0 GiB)" in text
    assert "host: does not grow with size" in text


def test_fit_arms_cupys_peak_hook_for_its_run_and_disarms_it_after(cupy_gpu):
    mon, cupy = cupy_gpu
    mon.config.cupy_peak_hook = False  # sampled per-cell peaks, as by default

    def step(n: int) -> None:
        cupy.malloc(0, n * MIB)  # here and gone between two samples: only a hook sees it
        cupy.free(0, n * MIB)

    result = mon.fit(step, sizes=(16, 32, 48))
    assert [(r.peaks["cupy"], r.exact["cupy"]) for r in result.table] == [
        (n * MIB, True) for n in (16, 32, 48)
    ]
    assert result.fits["cupy"].ok
    assert (
        not mon._session.allocator("cupy").peak_resettable
        and not mon._session.allocator("cupy").hook_wanted
    )  # as it was


def test_sampled_peaks_are_left_out_of_the_line_and_too_few_exact_ones_say_why():
    def row(size: int, peak: int, exact: bool) -> SizeRow:
        return SizeRow(size, "ok", 0.01, {"jax": peak}, {"jax": exact}, {"jax": 0})

    # JAX's high-water mark: the first size stays under the warm-up's peak, so it reads ≥ 0 B
    table = [row(64, 0, False), row(128, 128 * MIB, True), row(192, 192 * MIB, True)]
    fit = _fit_exact("jax", ("jax", 0), table, "reset")
    assert not fit.ok and fit.grows and fit.why == SampledPeaks(1, 3, "jax", "reset")
    assert reason_text(fit.why).startswith("1 of 3 peaks were sampled lower bounds (≥)")
    assert "JAX's peak counter is this process's high-water mark" in reason_text(fit.why)
    table.append(row(256, 256 * MIB, True))
    fit = _fit_exact("jax", ("jax", 0), table, "reset")  # three exact ones: a line, without ≥
    assert fit.ok and fit.slope == pytest.approx(MIB) and len(fit.points) == 3


def test_a_size_that_runs_out_stops_the_run_and_bounds_the_prediction(cupy_gpu):
    mon, cupy = cupy_gpu

    def step(n: int) -> None:
        if n >= 80:
            raise OutOfMemoryError(f"Out of memory allocating {n * MIB:,} bytes")
        cupy.malloc(0, n * MIB)
        cupy.free(0, n * MIB)

    result = mon.fit(step, sizes=(16, 32, 48, 64, 80, 96), limit="1 TiB", margin=0)
    assert [(r.size, r.outcome) for r in result.table] == [
        (16, "ok"), (32, "ok"), (48, "ok"), (64, "ok"), (80, "oom"),
    ]  # fmt: skip
    assert result.prediction["cupy"].size == 79
    assert mon.cells()[-1].status == "oom"
    text = repr(result)
    assert "    80  ran out of memory" in text
    assert "note: size 80 ran out of memory (OutOfMemoryError: Out of memory allocating" in text


def test_a_warm_up_that_runs_out_measures_nothing_and_says_so(cupy_gpu):
    mon, _ = cupy_gpu

    def step(n: int) -> None:
        raise OutOfMemoryError(f"Out of memory allocating {n} MiB")

    result = mon.fit(step, sizes=(16, 32, 48))
    assert result.table == [] and result.size is None and mon.cells() == []
    assert result.notes == [
        "the warm-up call at size 16 ran out of memory: OutOfMemoryError: Out of memory "
        "allocating 16 MiB"
    ]
    assert {kind: fit.reason for kind, fit in result.fits.items()} == {"host": "no size ran"}
    assert result.prediction["host"].reason == "no size ran"
    assert "  host: no size ran" in str(result)


def test_memory_kept_a_missing_warm_up_and_a_capped_pool_are_noted_in_words(cupy_gpu):
    mon, cupy = cupy_gpu
    cupy.pool.get_limit = lambda: 10 * GIB  # CuPy's pool limit, below the GPU's free memory

    def step(n: int) -> None:  # keeps 50 MiB of what it allocates
        cupy.malloc(0, n * 32 * MIB)
        cupy.free(0, n * 32 * MIB - 50 * MIB)

    result = mon.fit(step, sizes=(16, 32, 48), warmup=False)
    assert result.run.notes == (KeptAfter("cupy", 16, 50 * MIB), NoWarmup())
    assert result.notes == [
        "cupy: step(16) kept 50.0 MiB after it returned; the prediction assumes a step keeps "
        "nothing",
        "no warm-up call: the first size also paid for compiling and workspaces",
    ]
    prediction = result.prediction["cupy"]
    assert result.run.limits["cupy"] == room.Headroom(
        10 * GIB - 150 * MIB, room.UnderCap("CuPy's pool limit", 10 * GIB, 150 * MIB)
    )
    assert prediction.limit == 10 * GIB - 150 * MIB and prediction.reason == ""
    assert prediction.limit_note == "CuPy's pool limit 10.0 GiB - allocated 150 MiB"
    text = str(result)
    assert f"({prediction.limit_note} - margin " in text
    assert all(f"\n  note: {note}" in text for note in result.notes)


def test_a_step_that_fails_otherwise_raises_its_own_error(cupy_gpu):
    mon, _ = cupy_gpu

    def step(n: int) -> None:
        if n > 16:
            raise ValueError("bad shape")

    with pytest.raises(ValueError, match="bad shape"):
        mon.fit(step, sizes=(16, 32, 48))
    assert mon.cells()[-1].status == "error"


def test_bad_arguments_are_one_line_usage_errors(cupy_gpu):
    mon, _ = cupy_gpu
    for kwargs, words in [
        ({"sizes": ()}, "positive whole sizes"),
        ({"sizes": (0, 8)}, "positive whole sizes"),
        ({"sizes": (8.5,)}, "positive whole sizes"),
        ({"sizes": (8, 16, 24), "limit": "forty"}, "limit is not an amount of bytes"),
        ({"sizes": (8, 16, 24), "margin": -1}, "margin is a negative amount"),
    ]:
        with pytest.raises(UsageError, match=words):
            mon.fit(lambda n: None, **kwargs)
    with pytest.raises(UsageError, match="a function of one size"):
        mon.fit("step", sizes=(8, 16, 24))


def test_fit_shows_its_parameters_to_help_and_takes_them_by_position_or_name(cupy_gpu):
    mon, _ = cupy_gpu
    names = ["step", "sizes", "limit", "margin", "label", "warmup"]
    for fit in (nbgpumon.fit, mon.fit, Monitor.fit):
        shown = inspect.signature(fit).parameters
        assert [n for n in shown if n != "self"] == names, fit
        assert [shown[n].default for n in names[2:]] == [None, None, "fit", True]
    assert "\nfit(step: " in pydoc.render_doc(nbgpumon.fit, renderer=pydoc.plaintext)
    calls = []
    result = mon.fit(calls.append, (8, 16, 24), "1 TiB", 0, "mine", False)
    assert calls == [8, 16, 24]  # warmup False: no warm-up call
    assert [r.label for r in mon.cells()] == [f"mine size={n}" for n in (8, 16, 24)]
    assert result.prediction["host"].margin == 0
    with pytest.raises(TypeError, match="'size'"):
        mon.fit(calls.append, size=(8, 16, 24))


# -- real host memory -----------------------------------------------------------------------
HOST_STEP = (
    "import numpy as np, nbgpumon\n"
    "def step(n):\n"
    "    a = np.ones(n * 131072)  # n MiB, every page touched\n"
    "    return float(a[::512].sum())\n"
)


@pytest.fixture(scope="module")
def kernel_fit():
    return run_cells(
        [
            "%load_ext nbgpumon",
            HOST_STEP,
            "result = nbgpumon.fit(step, sizes=(16, 32, 48, 64))\nresult",
            "with nbgpumon.track('unseen size 160') as region:\n"
            "    step(160)\n"
            "rec = region.record\n"
            "predicted = result.fits['host'].peak_at(160)\n"
            "print('TRUE', rec.rss_peak - rec.rss_before, rec.rss_peak_exact)\n"
            "print('PREDICTED', predicted)",
        ]
    )


def test_in_a_kernel_fit_predicts_the_host_peak_of_an_unseen_size_within_5_percent(kernel_fit):
    *_, shown, unseen = kernel_fit
    assert shown.error is None, shown.text
    printed = dict(line.split(" ", 1) for line in unseen.stdout.splitlines())
    true_peak, exact = int(printed["TRUE"].split()[0]), printed["TRUE"].split()[1]
    predicted = float(printed["PREDICTED"])
    assert exact == "True"
    assert true_peak == pytest.approx(160 * MIB, rel=0.05)  # the measurement is real
    assert predicted == pytest.approx(true_peak, rel=0.05)


def test_in_a_kernel_the_result_shows_as_its_table(kernel_fit):
    text = kernel_fit[2].text
    lines = text.splitlines()
    assert lines[0].startswith("nbgpumon.fit: peak growth of step(size), 4 sizes")
    assert [line.split()[0] for line in lines[2:6]] == ["16", "32", "48", "64"]
    # about 1 MiB per size: "1.0 MiB" or "1023 KiB", as format_bytes rounds it
    assert re.search(
        r"^  host: (1\.0 MiB|10[12]\d KiB) per size .*\(R² (0\.99\d|1\.000)\)", text, re.M
    )
    assert "fits up to size" in text and "available" in text
    assert text.count("nbgpumon.fit:") == 1  # shown once: repr only, nothing printed


def test_outside_ipython_fit_starts_the_monitor_and_measures_host_memory():
    code = HOST_STEP + (
        "r = nbgpumon.fit(step, sizes=(16, 32, 48))\n"
        "print('SLOPE', r.fits['host'].slope, r.fits['host'].ok)\n"
        "print('SIZE', r.prediction['host'].size, r.size)\n"
        "print('FRAME', list(r.frame().columns), len(r.frame()))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    out = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    slope, ok = out["SLOPE"].split()
    assert float(slope) == pytest.approx(MIB, rel=0.05) and ok == "True"
    size, overall = out["SIZE"].split()
    assert int(size) > 48 and size == overall
    assert out["FRAME"] == "['size', 'outcome', 'seconds', 'host_peak', 'host_exact'] 3"
