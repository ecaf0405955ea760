"""What the GPU tests need, said once: torch, and a CUDA GPU that torch sees.

A module of GPU tests starts with ``torch, pytestmark = cuda_tests()``: without torch the
module is skipped; without a CUDA GPU each of its tests is, at its own line ("needs a CUDA
GPU"); all are marked ``gpu``, so that only ``pytest -m gpu`` selects them. A test that
imports torch only when it runs (in a module whose other tests run without torch, as in the
IPython 8 leg) calls ``needs_cuda()`` in its body instead. These skips stay skips on the GPU
machine too: only CuPy's and JAX's can be required there (``required.py``, scripts/gpu).
"""

from __future__ import annotations

from types import ModuleType

import pytest

NO_CUDA = "needs a CUDA GPU"


def cuda_tests() -> tuple[ModuleType, list[pytest.MarkDecorator]]:
    """torch, and the marks of a module of GPU tests (its ``pytestmark``); at a module's top,
    a skip of the whole module where torch is not installed."""
    __tracebackhide__ = True  # (a skip is reported at the test module's line, not here)
    torch = pytest.importorskip("torch")
    return torch, [
        pytest.mark.gpu,
        pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA),
    ]


def needs_cuda() -> ModuleType:
    """torch, in a test's body, or a skip of that test without torch or a CUDA GPU."""
    __tracebackhide__ = True
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(NO_CUDA)
    return torch
