"""``%%gpumon profile``'s picture: the operators of one profiled cell that took memory, as HTML
and text. The cell runs in ``_session/controls/profile_run.py`` (under a framework plug-in's
profiler); this module only draws what it returns."""

from __future__ import annotations

import html
from dataclasses import dataclass

from ..._foundation.wording import counted, format_bytes
from ..._session.controls.profile_run import ProfiledCell

_COLUMNS = (
    ("self_cuda_memory", "self CUDA mem"),
    ("cuda_memory", "CUDA mem"),
    ("self_cpu_memory", "self CPU mem"),
    ("cpu_memory", "CPU mem"),
)


@dataclass(frozen=True)
class ProfileResult:
    """The top operators of one profiled cell, by memory they allocated (bytes).

    ``rows`` holds one dict per operator, in ``table``'s order: ``name``, ``calls``,
    ``self_cuda_memory``, ``cuda_memory``, ``self_cpu_memory``, ``cpu_memory`` (bytes; "self"
    leaves out what the operators it called allocated; frees count negative) and
    ``self_cuda_time_us``, ``cuda_time_us`` (microseconds; ``None`` when CUDA was not
    profiled).
    """

    table: str
    rows: list[dict]
    sort_by: str
    note: str

    def _repr_html_(self) -> str:
        with_time = any(r.get("cuda_time_us") is not None for r in self.rows)
        with_cuda = with_time or any(
            r.get("cuda_memory") or r.get("self_cuda_memory") for r in self.rows
        )
        columns = _COLUMNS if with_cuda else _COLUMNS[2:]  # no CUDA columns for a CPU-only cell
        head = ["operator", "calls"] + [title for _, title in columns]
        if with_time:
            head += ["self CUDA time", "CUDA time"]
        lines = [
            "<div class='nbgpumon-profile'>",
            f"<p>top {counted(len(self.rows), 'operator')} by {html.escape(self.sort_by)}</p>",
        ]
        if self.note:
            lines.append(f"<p><em>{html.escape(self.note)}</em></p>")
        lines.append("<table><thead><tr>")
        lines += [f"<th>{html.escape(h)}</th>" for h in head]
        lines.append("</tr></thead><tbody>")
        for row in self.rows:
            cells = [str(row.get("name", "")), str(row.get("calls", ""))]
            cells += [format_bytes(row.get(key)) for key, _ in columns]
            if with_time:
                cells += [
                    _format_us(row.get("self_cuda_time_us")),
                    _format_us(row.get("cuda_time_us")),
                ]
            lines.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        lines.append("</tbody></table></div>")
        return "\n".join(lines)

    def __repr__(self) -> str:
        text = self.table or "no operators were recorded\n"
        return text + (f"{self.note}\n" if self.note else "")


def profile_result(found: ProfiledCell) -> ProfileResult:
    """A profiled cell (:func:`nbgpumon._session.controls.profile_run.profile_cell`) drawn: its top
    operators as a table and HTML."""
    return ProfileResult(found.table, found.rows, found.sort_by, found.note)


def _format_us(us: float | None) -> str:
    if us is None:
        return "—"
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.0f} µs"
