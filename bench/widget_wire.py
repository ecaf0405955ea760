"""Bytes per second the live widget puts on the wire, per GPU, at 10 Hz (target <= 1 KB/s).

A real kernel, with the sampler at 0.1 s and ``%gpumon`` shown, sleeps for a while; every
iopub message of the widget's ``samples`` stream is weighed: its binary buffers (the payload)
and its whole JSON frame (header, parent header, metadata, content) as ipykernel sends them.
GPUs are faked at NVML's boundary (tests/fake_nvml) so the 1- and 8-GPU cases (``--gpus``) run
anywhere; the byte counts don't depend on the GPU.
"""

from __future__ import annotations

import json
import os
import queue
import time
from pathlib import Path
from typing import Any

import result_file

FAKE_NVML = Path(__file__).resolve().parent.parent / "tests" / "fake_nvml"
TARGET_BYTES_PER_GPU = 1024.0


def add_arguments(parser: Any) -> None:
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to listen")
    parser.add_argument(
        "--gpus",
        default="1,8",
        help="GPU counts to fake, comma-separated (bench/two_gpus.sh adds 2)",
    )


def measure(gpus: int, seconds: float) -> dict[str, float]:
    """Payload and framed bytes/s and messages/s of the samples stream with ``gpus`` GPUs."""
    from jupyter_client.manager import start_new_kernel

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(FAKE_NVML), env.get("PYTHONPATH", "")])
    env["NBGPUMON_FAKE_NVML"] = json.dumps({"devices": [{} for _ in range(gpus)]})
    km, kc = start_new_kernel(kernel_name="python3", env=env)
    try:
        quiet = {"timeout": 60, "output_hook": lambda msg: None}
        kc.execute_interactive("%load_ext nbgpumon\n%config GPUMon.interval = 0.1", **quiet)
        kc.execute_interactive("%gpumon", **quiet)
        while True:  # drain what came before the measured window
            try:
                kc.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                break
        kc.execute(f"import time; time.sleep({seconds})")
        payload = framed = messages = every = 0
        rows = 0
        start = time.time()
        while time.time() - start < seconds:
            try:
                msg = kc.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                continue
            data = msg["content"].get("data", {})
            if msg["msg_type"] != "comm_msg":
                continue
            buffers = sum(len(b) for b in msg.get("buffers", []))
            frame = sum(
                len(json.dumps(msg[k], default=str))
                for k in ("header", "parent_header", "metadata", "content")
            )
            every += buffers + frame  # trait updates (the status line) count here too
            # the samples stream only: the ledger's ``cells`` messages carry rows of their own
            if data.get("method") != "custom" or data["content"].get("type") != "samples":
                continue
            payload += buffers
            framed += buffers + frame
            messages += 1
            rows += data["content"]["rows"]
        elapsed = time.time() - start
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return {
        "payload_bytes_per_s": payload / elapsed,
        "framed_bytes_per_s": framed / elapsed,
        "messages_per_s": messages / elapsed,
        "rows_per_s": rows / elapsed,
        "all_widget_bytes_per_s": every / elapsed,
    }


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("widget_wire", args)
    seconds = 3.0 if args.quick else args.seconds
    for gpus in sorted({int(n) for n in args.gpus.split(",") if n.strip()}):
        got = measure(gpus, seconds)
        result.details[f"{gpus}_gpus"] = got
        per_gpu = got["payload_bytes_per_s"] / gpus
        result.log(f"{gpus} GPU(s): {got}")
        result.add(
            f"samples payload per GPU at 10 Hz, {gpus} GPU(s)",
            per_gpu,
            "B/s",
            TARGET_BYTES_PER_GPU,
            note=f"{got['messages_per_s']:.2f} messages/s, {got['rows_per_s']:.1f} rows/s",
        )
        result.add(
            f"samples messages with Jupyter framing per GPU, {gpus} GPU(s)",
            got["framed_bytes_per_s"] / gpus,
            "B/s",
            note="header, parent header, metadata and content JSON included (not signatures)",
        )
        result.add(
            f"all of the widget's messages while a cell runs, per GPU, {gpus} GPU(s)",
            got["all_widget_bytes_per_s"] / gpus,
            "B/s",
            note="samples plus trait updates (status every 2 s), framing included",
        )
    result.finish()


if __name__ == "__main__":
    main()
