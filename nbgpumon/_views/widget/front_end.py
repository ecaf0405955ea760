"""What the front end that shows the kernel's widgets can do, as the kernel can tell it."""

from __future__ import annotations

import sys


def front_end_drops_thread_messages() -> bool:
    """Whether this kernel's front end drops widget messages sent from a thread other than the
    main one: Colab's (colabtools#3373), known by its package in the kernel (imported without
    the chart's libraries: ``%gpumon`` asks it before it draws anything)."""
    return "google.colab" in sys.modules
