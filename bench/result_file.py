"""The command line every bench/ script shares, and the JSON result file each one writes.

A result file holds ``meta`` (machine_info.describe()), ``metrics`` (one row per number that
bench/summarize.py puts in its table, with its target where the issue gives one), ``skipped``
(parts that could not run here, and why) and ``details`` (everything else, for later reading).
Targets are reported against, never asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import machine_info


def parse_args(
    description: str, add_arguments: Callable[[argparse.ArgumentParser], None] | None = None
) -> argparse.Namespace:
    """``--out DIR`` (default: the current directory) and ``--quick``, plus the script's own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--out", type=Path, default=Path("."), help="directory for the JSON result file"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a fast smoke run (numbers not meaningful)"
    )
    if add_arguments is not None:
        add_arguments(parser)
    return parser.parse_args()


@dataclass
class Metric:
    """One number for the summary table.

    ``met`` is value <= target when both are known, and None ("inconclusive") when the
    value's confidence interval ``ci`` has the target inside it, or lies wholly below zero
    (every target here is a cost: a negative one is noise or drift, not a result).
    """

    metric: str
    value: float | None
    unit: str
    target: float | None = None
    note: str = ""
    ci: tuple[float, float] | None = None

    @property
    def met(self) -> bool | None:
        if self.value is None or self.target is None or math.isnan(self.value):
            return None
        if self.ci is not None and (self.ci[0] <= self.target <= self.ci[1] or self.ci[1] < 0):
            return None
        return self.value <= self.target

    @property
    def verdict(self) -> str:
        if self.target is None or self.value is None:
            return ""
        return {True: "met", False: "NOT met", None: "inconclusive"}[self.met]


class Result:
    """Collects one benchmark's numbers; :meth:`finish` prints them and writes the file."""

    def __init__(self, benchmark: str, args: argparse.Namespace) -> None:
        self.benchmark = benchmark
        self.out_dir: Path = args.out
        self.quick: bool = bool(args.quick)
        self.metrics: list[Metric] = []
        self.skipped: list[str] = []
        self.details: dict[str, Any] = {}
        self._started = time.perf_counter()

    def add(
        self,
        metric: str,
        value: float | None,
        unit: str,
        target: float | None = None,
        note: str = "",
        ci: tuple[float, float] | None = None,
    ) -> None:
        self.metrics.append(Metric(metric, value, unit, target, note, ci))

    def skip(self, part: str, why: str) -> None:
        self.skipped.append(f"{part}: {why}")
        print(f"[{self.benchmark}] skipped {part}: {why}", flush=True)

    def log(self, message: str) -> None:
        print(f"[{self.benchmark}] {message}", flush=True)

    def finish(self) -> Path:
        """Print the summary, write ``<out>/<benchmark>.json`` and return its path."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / f"{self.benchmark}.json"
        payload: dict[str, Any] = {
            "benchmark": self.benchmark,
            "quick": self.quick,
            "seconds": time.perf_counter() - self._started,
            "meta": machine_info.describe(),
            "metrics": [{**asdict(m), "met": m.met, "verdict": m.verdict} for m in self.metrics],
            "skipped": self.skipped,
            "details": self.details,
        }
        path.write_text(json.dumps(_finite(payload), indent=2) + "\n")
        self._print_summary(payload["meta"], path)
        return path

    def _print_summary(self, meta: dict[str, Any], path: Path) -> None:
        gpus = ", ".join(meta["gpu_names"]) or f"no GPU ({meta['nvml_status']})"
        quick = " [--quick: smoke run, numbers not meaningful]" if self.quick else ""
        print(f"\n== {self.benchmark} on {meta['host']} ({gpus}){quick}")
        for m in self.metrics:
            target = (
                f" (target <= {format_value(m.target, m.unit)})" if m.target is not None else ""
            )
            verdict = f" {m.verdict}" if m.verdict else ""
            note = f"  [{m.note}]" if m.note else ""
            print(f"  {m.metric}: {format_value(m.value, m.unit)}{target}{verdict}{note}")
        for part in self.skipped:
            print(f"  skipped {part}")
        print(f"  -> {path}", flush=True)


def format_value(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".rstrip()


def _finite(obj: Any) -> Any:
    """JSON has no NaN/inf: write them as null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj
