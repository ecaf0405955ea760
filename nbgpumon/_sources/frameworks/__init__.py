"""Framework plug-ins: one package per framework (torch, JAX, CuPy built in), each registering
its metrics and itself when imported. See :mod:`.plugin`."""

from __future__ import annotations

from .plugin import (
    Framework,
    Setting,
    facts_of,
    framework,
    frameworks,
    plugin_settings,
    register_framework,
)

# isort: off
# The built-ins, imported for their registrations: this order is their display order.
from . import torch as _torch
from . import jax as _jax
from . import cupy as _cupy

# isort: on

__all__ = [
    "Framework",
    "Setting",
    "facts_of",
    "framework",
    "frameworks",
    "plugin_settings",
    "register_framework",
]  # fmt: skip
del _torch, _jax, _cupy
