"""A real kernel charges the process a cell starts to that cell (docs/children.md): the fake
NVML lists the kernel's real descendants that say what they use, and the summary line and
``%gpumon cells`` name the child with its peak and utilization."""

from __future__ import annotations

import re

from notebook_runner import fake_nvml_env, run_cells


def _holder(folder: str, used: int, sm: int, hold: float) -> str:
    """A ``python -c`` program that says it uses ``used`` bytes at ``sm``% for ``hold``
    seconds, then lets go. No braces or dollars: IPython's ``!`` expands those."""
    return (
        "import json,os,time; "
        f"p=os.path.join('{folder}', str(os.getpid())); "
        f"open(p,'w').write(json.dumps(dict(used={used}, sm={sm}))); "
        f"time.sleep({hold}); os.remove(p)"
    )


def test_a_shell_escape_s_python_is_charged_to_its_cell_with_its_peak_and_utilization(tmp_path):
    folder = tmp_path / "gpu-use"
    folder.mkdir()
    env = fake_nvml_env(
        devices=[{"name": "Fake GPU", "used": 2**30, "total": 2**34}],
        processes=[
            {"pid": "self", "used": 2**20},
            {"pid": "descendants", "used_from": str(folder)},
        ],
    )
    # `!` runs it through sh: the python is the kernel's grandchild (depth 2), as expected
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%gpumon summary on",
            f'!python -c "{_holder(str(folder), 3 * 2**30, 87, 1.5)}"',
            "%gpumon cells",
        ],
        env=env,
    )
    lines = [x for x in runs[2].stdout.splitlines() if x.startswith("[3] ")]
    assert len(lines) == 1, runs[2].text
    assert re.search(
        r" · children: python -c import json,os,time; .*? ≥3\.0 GiB on gpu0, 87%$", lines[0]
    ), lines[0]
    table = runs[3].text.splitlines()
    header = next(x for x in table if x.startswith("cell "))
    row = next(x for x in table if x.startswith("[3] "))
    assert "children" in header, runs[3].text
    assert row[header.index("children") :].startswith("1: ≥3.0 GiB"), runs[3].text
    assert not list(folder.iterdir())  # the child let go of its file: it ran to its end
