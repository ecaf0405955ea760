"""The lines nbgpumon prints after a cell come after what the cell said, in a real kernel's
output as in a terminal (tests/test_terminal_ipython.py): a kernel sends a cell's stdout,
then its stderr, when both wait at the cell's end, so a UsageError (stderr) came after the
summary line (stdout)."""

from __future__ import annotations

import re

from notebook_runner import run_cells

SUMMARY = r"\[\d+\] host .* · error\n"  # a failed cell's summary line


def test_with_the_summary_on_a_failing_cells_output_and_error_come_before_its_summary():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%gpumon summary on",
            "print('said first')\n%gpumon bogus",
            "import nbgpumon\nnbgpumon.mark('')",
        ],
        timeout=120,
    )
    for run, error in ((runs[2], "UsageError: unknown command 'bogus'"),
                       (runs[3], "UsageError: mark() takes a non-empty label")):  # fmt: skip
        streams = [(o["name"], o["text"]) for o in run.outputs if o["output_type"] == "stream"]
        texts = [text for _, text in streams]
        said = [i for i, text in enumerate(texts) if text.startswith(error)]
        summary = [i for i, text in enumerate(texts) if re.match(SUMMARY, text)]
        assert said and summary and said[0] < summary[0], streams
        assert streams[said[0]][0] == "stderr", streams
    assert runs[2].outputs[0]["text"] == "said first\n"  # the cell's own output, first
