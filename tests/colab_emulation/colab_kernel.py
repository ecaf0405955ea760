"""Colab's known constraints, emulated at the kernel's boundary (an IPython startup file).

Colab itself cannot be reached from here. What this reproduces of it:

- ``google.colab.output`` is importable (anywidget and nbgpumon detect Colab by it), with
  ``enable_custom_widget_manager()``, which is off until called; the calls are counted in
  ``google.colab.output.custom_widget_manager_calls``.
- Output sent from a thread other than the kernel's main thread never reaches the page
  (googlecolab/colabtools#3373: a widget updated from a background thread does not change
  until the main thread sends its state). Every display, display update and comm message sent
  from another thread is dropped, and counted by type in ``google.colab.output.dropped``.
  Streams are left alone: ipykernel flushes every print from its own IO thread, so which
  thread printed is not known where they are sent (and nbgpumon's thread prints nothing).
"""

from __future__ import annotations

import sys
import threading
import types
from collections import Counter


def _install_google_colab() -> types.ModuleType:
    google = types.ModuleType("google")
    colab = types.ModuleType("google.colab")
    output = types.ModuleType("google.colab.output")
    widgets = types.ModuleType("google.colab.output._widgets")
    widgets._installed_url = None  # what anywidget reads; None: Colab's default manager
    output._widgets = widgets
    output.custom_widget_manager_calls = 0
    output.dropped = Counter()

    def enable_custom_widget_manager() -> None:
        output.custom_widget_manager_calls += 1

    output.enable_custom_widget_manager = enable_custom_widget_manager
    google.colab, colab.output = colab, output
    for module in (google, colab, output, widgets):
        sys.modules[module.__name__] = module
    return output


def _drop_thread_output(kernel, dropped: Counter) -> None:
    session, iopub = kernel.session, kernel.iopub_socket
    send = session.send

    def send_from_main_thread_only(stream, msg_or_type, *args, **kwargs):
        kind = msg_or_type if isinstance(msg_or_type, str) else msg_or_type["header"]["msg_type"]
        if (
            stream is iopub
            and kind != "status"
            and threading.current_thread() is not threading.main_thread()
        ):
            dropped[kind] += 1
            return None
        return send(stream, msg_or_type, *args, **kwargs)

    session.send = send_from_main_thread_only


_output = _install_google_colab()
_drop_thread_output(get_ipython().kernel, _output.dropped)  # noqa: F821 - a startup file
