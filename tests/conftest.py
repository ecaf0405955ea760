"""What every test may use: the helpers importable as plain modules, a real kernel."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# the tests import their helpers (notebook_runner) as plain modules
sys.path.insert(0, str(Path(__file__).parent))

from kernel_client import Kernel


@pytest.fixture
def kernel() -> Iterator[Kernel]:
    """A real ipykernel for one test, shut down after it."""
    k = Kernel()
    try:
        yield k
    finally:
        k.stop()
