"""Where a benchmark ran: date, host, CPU, GPUs (from NVML), torch, nbgpumon, git commit.

Never initialises CUDA: GPU names come from NVML, and from torch only when the benchmark
itself already initialised CUDA.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


def command_line() -> str:
    """The exact command that started this process."""
    return shlex.join([sys.executable, *sys.argv])


def describe() -> dict[str, Any]:
    """A JSON-ready description of this machine and this run."""
    nvml = nvml_devices()
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "gpu_names": nvml["names"] or _torch_gpu_names(),
        "gpu_count": len(nvml["names"]),
        "nvml_status": nvml["status"],
        "driver_version": nvml["driver"],
        "torch": _torch_versions(),
        "nbgpumon": _nbgpumon_version(),
        "git": _git_state(),
        "command_line": command_line(),
        "cwd": os.getcwd(),
        "env": {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "PYTHONPATH")},
    }


def nvml_devices() -> dict[str, Any]:
    """GPU names and driver version from NVML; ``status`` says why they are missing."""
    out: dict[str, Any] = {"names": [], "driver": None, "status": "ok"}
    try:
        import pynvml
    except Exception as exc:
        out["status"] = f"pynvml not importable ({type(exc).__name__})"
        return out
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        out["status"] = f"NVML could not start: {exc}"
        return out
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        out["driver"] = driver.decode() if isinstance(driver, bytes) else str(driver)
        for i in range(pynvml.nvmlDeviceGetCount()):
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
            out["names"].append(name.decode() if isinstance(name, bytes) else str(name))
    except Exception as exc:
        out["status"] = f"NVML query failed: {exc}"
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
    return out


def _torch_versions() -> dict[str, Any]:
    try:
        import torch
    except Exception as exc:
        return {"version": None, "error": f"{type(exc).__name__}: {exc}"}
    return {
        "version": torch.__version__,
        "cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "cuda_initialized": torch.cuda.is_initialized(),
    }


def _torch_gpu_names() -> list[str]:
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return []
    try:
        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception:
        return []


def _nbgpumon_version() -> dict[str, Any]:
    try:
        import nbgpumon
    except Exception as exc:
        return {"version": None, "error": f"{type(exc).__name__}: {exc}"}
    return {"version": nbgpumon.__version__, "path": str(Path(nbgpumon.__file__).parent)}


def _git_state() -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(REPO_ROOT), *args],
                capture_output=True,
                text=True,
                timeout=10,
            )
        except Exception:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain")
    return {
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(status) if status is not None else None,
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
