"""Skips that a run can forbid: a test that cannot run here (no browser, no Prometheus, no
mount, no CuPy) skips with its reason, unless an ``NBGPUMON_REQUIRE_*`` variable says that this
run is the one that must run it (CI, scripts/gpu); then the same reason is a failure, so that a
machine that lost what the test needs is never reported green.

    NBGPUMON_REQUIRE_BROWSER     Chromium and Playwright (tests/browser/)
    NBGPUMON_REQUIRE_PROMETHEUS  Debian's prometheus server (the cluster tests)
    NBGPUMON_REQUIRE_MOUNTS      mounting a tmpfs and an ext4 loop image (recording faults)
    NBGPUMON_REQUIRE_CUPY_JAX    CuPy and JAX importable (the GPU tests, scripts/gpu)
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

BROWSER = "NBGPUMON_REQUIRE_BROWSER"
PROMETHEUS = "NBGPUMON_REQUIRE_PROMETHEUS"
MOUNTS = "NBGPUMON_REQUIRE_MOUNTS"
CUPY_JAX = "NBGPUMON_REQUIRE_CUPY_JAX"


def required(variable: str) -> bool:
    """Whether this run says it must run what ``variable`` names (set, and not "0")."""
    return os.environ.get(variable, "") not in ("", "0")


def skip_unless_required(reason: str, variable: str) -> NoReturn:
    """Skip with ``reason``, or fail with it where ``variable`` is set. Works at a module's top
    level too (a module that cannot import what it tests)."""
    if required(variable):
        pytest.fail(f"{variable}=1 but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def import_or_skip(name: str, variable: str) -> ModuleType:
    """The module ``name``, or a skip (a failure where ``variable`` is set) saying why not."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        why = f"{name} is not importable ({e})"
    skip_unless_required(why, variable)  # (outside the except: no chained traceback)
