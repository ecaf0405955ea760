"""A widget comm that encodes what it sends as ipykernel does (JSON), and weighs it.

Outside a kernel ipywidgets sends through a DummyComm that drops every message unencoded, so a
benchmark of the hooks with the widget shown would miss the cost of the ledger's update going
out. ``install()`` makes every new widget's comm a ``JsonComm``: each message's content is encoded
with ``json.dumps``, as jupyter_client's session does before the kernel sends it, and its size
(buffers included) appended to ``SENT``.
"""

from __future__ import annotations

import json
from typing import Any

import comm
from comm.base_comm import BaseComm

SENT: list[int] = []  # bytes of each message's encoded content, buffers included


class JsonComm(BaseComm):
    """Encodes each message to JSON, as the kernel's session would, and keeps only its size."""

    def publish_msg(
        self,
        msg_type: str,
        data: Any = None,
        metadata: Any = None,
        buffers: Any = None,
        **keys: Any,
    ) -> None:
        content = {"data": {} if data is None else data, "comm_id": self.comm_id, **keys}
        text = json.dumps(content, default=str, ensure_ascii=False, allow_nan=False)
        SENT.append(len(text.encode()) + sum(len(memoryview(b).cast("B")) for b in buffers or ()))


def install() -> None:
    """Give every widget made from now on a JsonComm."""
    comm.create_comm = JsonComm
