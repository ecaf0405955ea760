"""The words for the processes a cell started: ``python train.py ≥3.0 GiB on gpu0, 87%``.

Duck-typed on the record's children (``ChildUsage``: ``pid``, ``command``, ``exit_code``,
``running``, ``gpus`` of ``index``/``peak``/``exact``/``util_mean``, ``rank``, ``job``,
``launcher``): views import nothing from the sources.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..._foundation.wording import format_bytes

SHOWN = 3  # children (or jobs) named in one line; the rest are counted


def gpu_key(index: int) -> str:
    """The default name of a child's GPU: the device source's index, ``gpu0``."""
    return f"gpu{index}"


@dataclass(frozen=True)
class _Unit:
    """One thing the line names: a lone child, or the ranks of one job."""

    head: str  # "python train.py", "job torchrun --nproc_per_node=2 train.py: 2 ranks"
    members: tuple[Any, ...]

    @property
    def peak(self) -> int:
        return sum(c.peak for c in self.members)


def children_text(children: Sequence[Any], devices_key: Callable[[int], str] | None = None) -> str:
    """The processes a cell started, the biggest first:
    ``python train.py ≥3.0 GiB on gpu0, 87%; bash run.sh 1.0 GiB on gpu1, exit 1``. Past three,
    ``and 2 more``; "" for no children. Ranks of one job are one entry:
    ``job torchrun train.py: 2 ranks ≥2.0 GiB on gpu0+gpu1, 80%``."""
    key = devices_key or gpu_key
    units = sorted(_units(children), key=lambda u: -u.peak)
    words = [_unit_text(u, key) for u in units[:SHOWN]]
    if len(units) > SHOWN:
        words.append(f"and {len(units) - SHOWN} more")
    return "; ".join(words)


def job_lines(
    children: Sequence[Any], devices_key: Callable[[int], str] | None = None
) -> list[str]:
    """Each rank of each job on its own line, by rank: ``rank 0 (PID 123) ≥1.0 GiB on gpu0,
    81%``, under its job's line; [] when no child is a rank of a job."""
    key = devices_key or gpu_key
    lines = []
    for unit in _units(children):
        if not unit.members[0].job:
            continue
        lines.append(_unit_text(unit, key))
        for c in sorted(unit.members, key=_rank_order):
            lines.append(f"  rank {_rank(c)} (PID {c.pid}) {_figures([c], key)}{_state(c)}")
    return lines


def children_count_and_peak(children: Sequence[Any]) -> str:
    """How many children, and their peaks summed (the cells table's column): ``1: ≥3.0 GiB``; "" for
    none."""
    if not children:
        return ""
    exact = all(c.exact for c in children)
    return f"{len(children)}: {'' if exact else '≥'}{format_bytes(sum(c.peak for c in children))}"


def _units(children: Sequence[Any]) -> list[_Unit]:
    """Lone children and jobs, in the order their first member came."""
    jobs: dict[str, list[Any]] = {}
    units: list[_Unit | str] = []
    for c in children:
        if not c.job:
            units.append(_Unit(c.command, (c,)))
        elif c.job in jobs:
            jobs[c.job].append(c)
        else:
            jobs[c.job] = [c]
            units.append(c.job)
    out = []
    for u in units:
        if isinstance(u, str):
            ranks = sorted(jobs[u], key=_rank_order)
            command = ranks[0].launcher or ranks[0].command
            count = f"{len(ranks)} rank{'s' if len(ranks) != 1 else ''}"
            out.append(_Unit(f"job {command}: {count}", tuple(ranks)))
        else:
            out.append(u)
    return out


def _unit_text(unit: _Unit, key: Callable[[int], str]) -> str:
    if len(unit.members) == 1 and not unit.members[0].job:
        return f"{unit.head} {_figures(unit.members, key)}{_state(unit.members[0])}"
    return f"{unit.head} {_figures(unit.members, key)}{_job_state(unit.members)}"


def _figures(members: Sequence[Any], key: Callable[[int], str]) -> str:
    """``≥3.0 GiB on gpu0, 87%``: peaks summed, the GPUs used, SM utilization averaged."""
    gpus = [g for c in members for g in c.gpus]
    exact = bool(gpus) and all(g.exact for g in gpus)
    text = ("" if exact else "≥") + format_bytes(sum(g.peak for g in gpus))
    indices = sorted({g.index for g in gpus})
    if indices:
        text += " on " + "+".join(key(i) for i in indices)
    utils = [u for c in members if (u := _util(c)) is not None]
    if utils:
        text += f", {sum(utils) / len(utils):.0f}%"
    return text


def _util(child: Any) -> float | None:
    """A child's SM utilization: the mean over its GPUs that report one."""
    known = [g.util_mean for g in child.gpus if g.util_mean is not None]
    return sum(known) / len(known) if known else None


def _state(child: Any) -> str:
    """``, running``, ``, exit 1``, ``, killed by SIGKILL``; "" for a clean exit or none seen."""
    if child.running:
        return ", running"
    code = child.exit_code
    if code is None or code == 0:
        return ""
    if code > 0:
        return f", exit {code}"
    try:
        return f", killed by {signal.Signals(-code).name}"
    except ValueError:
        return f", killed by signal {-code}"


def _job_state(ranks: Sequence[Any]) -> str:
    """One state for the whole job when its ranks agree; else each rank's that has one."""
    states = [_state(c) for c in ranks]
    if len(set(states)) == 1:
        return states[0]
    return "".join(f", rank {_rank(c)} {s[2:]}" for c, s in zip(ranks, states, strict=True) if s)


def _rank(child: Any) -> str:
    return "?" if child.rank is None else str(child.rank)


def _rank_order(child: Any) -> tuple[int, int]:
    return (child.rank if child.rank is not None else 1 << 30, child.pid)
