"""notebooks/training.ipynb runs on a machine without a GPU too (small sizes on the CPU), and
leaves a recording beside it that loads."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import nbgpumon

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "training.ipynb"


def test_the_training_notebook_runs_and_its_recording_loads(tmp_path):
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    nb = nbformat.read(tmp_path / NOTEBOOK.name, as_version=4)
    NotebookClient(
        nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    text = "\n".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert "nbgpumon: recording to training.sqlite" in text
    assert "nbgpumon: recording stopped" in text
    session = nbgpumon.load(tmp_path / "training.sqlite")
    labels = [r.label for r in session.records if r.kind == "region"]
    assert labels == ["epoch 0", "epoch 1", "epoch 2"]
    errors = [r for r in session.records if r.status != "ok"]
    assert [r.error.split(":")[0] for r in errors] == ["RuntimeError"]  # no such memory on a CPU
    assert [label for _, label in session.marks] == ["training done"]
