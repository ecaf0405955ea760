"""Execute a notebook in a fresh kernel and save it with its outputs.

python scripts/execute_notebook.py notebooks/quickstart.ipynb executed.ipynb
"""

from __future__ import annotations

import sys

import nbformat
from nbclient import NotebookClient


def main(source: str, target: str) -> None:
    nb = nbformat.read(source, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=600).execute()
    nbformat.write(nb, target)


if __name__ == "__main__":
    main(*sys.argv[1:3])
