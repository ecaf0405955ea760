"""Read the bench/ JSON results in DIR; print a markdown table and write it to DIR/summary.md.

Usage: python bench/summarize.py DIR. The table has one row per reported number, its target
where the issue gives one, and whether it was met; below it, what was skipped, and which
scripts failed or timed out (from DIR/run_all.log, written by bench/run_all.sh).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from result_file import format_value

ORDER = [
    "tick_cost",
    "training_loop",
    "hook_cost",
    "holder_scan",
    "trace_cost",
    "load_time",
    "timeline_memory",
]
STATUS = re.compile(r"^### bench-status name=(\S+) rc=(-?\d+) seconds=(\d+)$")


def load_results(directory: Path) -> list[dict[str, Any]]:
    found = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "benchmark" in data and "metrics" in data:
            found.append(data)
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(found, key=lambda d: rank.get(d["benchmark"], len(ORDER)))


def run_statuses(directory: Path) -> list[tuple[str, int, int]]:
    """(script, exit code, seconds) for every script run_all.sh ran."""
    log = directory / "run_all.log"
    if not log.exists():
        return []
    last: dict[str, tuple[str, int, int]] = {}  # a script run twice: its last run counts
    for line in log.read_text(errors="replace").splitlines():
        match = STATUS.match(line.strip())
        if match:
            last[match[1]] = (match[1], int(match[2]), int(match[3]))
    return list(last.values())


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def machine_line(meta: dict[str, Any]) -> str:
    gpus = ", ".join(meta.get("gpu_names") or []) or f"no GPU ({meta.get('nvml_status')})"
    torch = meta.get("torch") or {}
    git = meta.get("git") or {}
    commit = (git.get("commit") or "unknown")[:12] + (" (dirty)" if git.get("dirty") else "")
    driver = f", driver {meta['driver_version']}" if meta.get("driver_version") else ""
    return (
        f"{meta.get('date_utc')} on {meta.get('host')}: {gpus}{driver}; "
        f"torch {torch.get('version')} (CUDA {torch.get('cuda')}); Python {meta.get('python')}; "
        f"{meta.get('cpu')} x{meta.get('cpu_count')}; nbgpumon commit {commit}"
    )


def render(directory: Path) -> str:
    results = load_results(directory)
    lines = ["# nbgpumon benchmarks", ""]
    if results:
        lines += [machine_line(results[0]["meta"]), ""]
    if any(r.get("quick") for r in results):
        lines += ["**--quick smoke run: the numbers are not meaningful.**", ""]
    lines += ["| metric | value | target | met? | notes |", "| --- | --- | --- | --- | --- |"]
    for r in results:
        for m in r["metrics"]:
            unit = m.get("unit", "")
            target = "—" if m.get("target") is None else f"≤ {format_value(m['target'], unit)}"
            met = {"met": "yes", "NOT met": "**no**", "inconclusive": "inconclusive"}.get(
                m.get("verdict", ""), "—"
            )
            name = f"{r['benchmark']}: {m['metric']}"
            value = format_value(m.get("value"), unit)
            lines.append(
                f"| {cell(name)} | {value} | {target} | {met} | {cell(m.get('note', ''))} |"
            )
    skipped = [(r["benchmark"], s) for r in results for s in r.get("skipped", [])]
    if skipped:
        lines += ["", "Skipped:"]
        lines += [f"- {name}: {cell(why)}" for name, why in skipped]
    statuses = run_statuses(directory)
    reported = {r["benchmark"] for r in results}
    problems = []
    for name, rc, seconds in statuses:
        if rc in (124, 137):
            problems.append(f"- {name}: timed out after {seconds} s (exit {rc})")
        elif rc != 0:
            problems.append(f"- {name}: failed (exit {rc}) after {seconds} s; see run_all.log")
        elif name not in reported:
            problems.append(f"- {name}: exited 0 but wrote no result file")
    if problems:
        lines += ["", "Problems:", *problems]
    if statuses:
        total = sum(s for _, _, s in statuses)
        lines += ["", f"Ran {len(statuses)} scripts in {total} s."]
    for r in results:
        lines.append(
            f"- {r['benchmark']}: `{r['meta'].get('command_line')}` ({r['seconds']:.0f} s)"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, nargs="?", default=Path("bench-results"))
    args = parser.parse_args()
    text = render(args.dir)
    print(text, end="")
    (args.dir / "summary.md").write_text(text)


if __name__ == "__main__":
    main()
