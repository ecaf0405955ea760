"""What the browser sends the widget reaches it in a real ipykernel with subshells (7.4), even
after the subshell that a message it answered came over is gone: JupyterLab 4.6 sends each
comm's messages over a subshell of the page's own, and deletes it when done with it (a reload
does, for the widget manager's control comm)."""

from __future__ import annotations

import re

import pytest

from kernel_client import Kernel

ipykernel = pytest.importorskip("ipykernel")


@pytest.fixture
def kernel():
    k = Kernel()
    try:
        yield k
    finally:
        k.stop()


def _control(kernel: Kernel, msg_type: str, content: dict) -> dict:
    client = kernel.client
    msg = client.session.msg(msg_type, content)
    client.control_channel.send(msg)
    while True:
        reply = client.control_channel.get_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return reply["content"]


def _resend(kernel: Kernel, comm_id: str, start: int, stop: int, subshell: str | None) -> str:
    """A ``resend`` request for rows [start, stop) as JupyterLab sends it: a comm_msg, over
    ``subshell`` when given; its message id."""
    client = kernel.client
    data = {"method": "custom", "content": {"type": "resend", "from": start, "to": stop}}
    msg = client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
    if subshell is not None:
        msg["header"]["subshell_id"] = subshell
    client.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def _fills(msgs: list[dict]) -> list[dict]:
    return [
        m["content"]["data"]["content"]
        for m in msgs
        if m["msg_type"] == "comm_msg"
        and m["content"]["data"].get("method") == "custom"
        and m["content"]["data"]["content"].get("fill") is True
    ]  # fmt: skip


def test_a_resend_is_answered_after_the_subshell_of_the_last_one_was_deleted(kernel):
    info = kernel.client.kernel_info(reply=True)
    if "kernel subshells" not in info["content"].get("supported_features", []):
        pytest.skip("this ipykernel has no subshells")
    kernel.run("%load_ext nbgpumon")
    kernel.run("%gpumon")
    (opened,) = [
        m for m in kernel.messages
        if m["msg_type"] == "comm_open" and "columns" in m["content"]["data"].get("state", {})
    ]  # fmt: skip
    comm_id = opened["content"]["comm_id"]
    out = kernel.run(
        "import time, nbgpumon\n"
        "p = nbgpumon.monitor()._publisher\n"
        "deadline = time.monotonic() + 60\n"
        "while p._cursor < 10 and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print('SENT', p._cursor)"
    )
    text = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")
    sent = int(re.search(r"SENT (\d+)", text).group(1))
    assert sent >= 10, text

    subshell = _control(kernel, "create_subshell_request", {})["subshell_id"]
    first = kernel.wait(_resend(kernel, comm_id, 0, 4, subshell))
    assert [(f["start"], f["rows"]) for f in _fills(first)] == [(0, 4)]
    assert _control(kernel, "delete_subshell_request", {"subshell_id": subshell})["status"] == "ok"

    # the page that used it is gone; the next page asks over no subshell (or its own)
    second = kernel.wait(_resend(kernel, comm_id, 4, 9, None))
    assert [(f["start"], f["rows"]) for f in _fills(second)] == [(4, 5)]
