"""A real ipykernel driven through jupyter_client, keeping every iopub message it sends."""

from __future__ import annotations

import itertools
import queue
import time
from collections.abc import Callable, Iterator

from jupyter_client.manager import start_new_kernel


class Kernel:
    """A real ipykernel, with every iopub message kept for inspection."""

    def __init__(self) -> None:
        self.manager, self.client = start_new_kernel(kernel_name="python3")
        self.messages: list[dict] = []

    def run(self, code: str, timeout: float = 60, **options: bool) -> list[dict]:
        """Execute ``code``; return the iopub messages it caused, in order. ``options``: the
        execute_request's flags as a front end sets them (``silent``, ``store_history``)."""
        return self.wait(self.submit(code, **options), timeout)

    def submit(self, code: str, **options: bool) -> str:
        """Start executing ``code`` without waiting for it; :meth:`wait` collects it."""
        # One request at a time, so no queue to abort after an error; with the default
        # (stop_on_error) ipykernel 6.17.1, Colab's, aborts a request sent the moment after
        # an error's reply: no execute_input, no output. nbclient with allow_errors does so too.
        return self.client.execute(code, **{"stop_on_error": False, **options})

    def wait(self, msg_id: str, timeout: float = 60) -> list[dict]:
        """The iopub messages of the execution ``msg_id``, once the kernel is idle after it."""
        got: list[dict] = []
        for msg in self._coming(time.time() + timeout):
            if msg["parent_header"].get("msg_id") == msg_id:
                got.append(msg)
                if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                    return got
        raise TimeoutError(f"no idle after request {msg_id}")

    def wait_for(
        self, found: Callable[[dict], bool], timeout: float = 60, since: int | None = None
    ) -> list[dict]:
        """The iopub messages until one for which ``found`` is true (whatever request it answers:
        the sampler's thread sends between requests too), that one last: from the ``since``-th
        kept message on (those kept already first), else from now."""
        kept = self.messages[since:] if since is not None else []
        got: list[dict] = []
        for msg in itertools.chain(kept, self._coming(time.time() + timeout)):
            got.append(msg)
            if found(msg):
                return got
        raise TimeoutError(f"no such message in {timeout} s")

    def _coming(self, deadline: float) -> Iterator[dict]:
        """Each iopub message as it comes, kept in ``messages``, until ``deadline``."""
        while time.time() < deadline:
            try:
                msg = self.client.get_iopub_msg(timeout=1)
            except queue.Empty:
                continue
            self.messages.append(msg)
            yield msg

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
