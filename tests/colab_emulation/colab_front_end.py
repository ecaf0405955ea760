"""What Colab's closed front end is known to do with a background thread's messages, emulated
at the kernel's boundary (an IPython startup file, or a kernel's ``exec_files``).

Colab's front end cannot be reached from here; its kernel side can, and the Colab leg
(scripts/legs/colab) runs the real one: Colab's kernel class and Shell, google.colab.output,
its custom widget manager. This file adds only the front end's known behaviour:
googlecolab/colabtools#3373 (open): widget updates and displays sent from a background thread
do not show (only what the main thread sends later, e.g. ``send_state()`` in another cell,
does). So every display, display update and comm message sent on iopub from a thread other
than the kernel's main thread is dropped, and counted by type in
``get_ipython().kernel.dropped_by_front_end``.

Streams are left alone: ipykernel flushes every print from its own IO thread, so which thread
printed is not known where they are sent (and nbgpumon's thread prints nothing). Nothing else of
Colab is emulated: without google.colab installed, this is any front end that drops what a
kernel's background thread sends.
"""

from __future__ import annotations

import threading
from collections import Counter


def _drop_thread_output(kernel) -> Counter:
    session, iopub = kernel.session, kernel.iopub_socket
    send = session.send
    dropped: Counter = Counter()

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
    return dropped


_kernel = get_ipython().kernel  # noqa: F821 - a startup file
_kernel.dropped_by_front_end = _drop_thread_output(_kernel)
