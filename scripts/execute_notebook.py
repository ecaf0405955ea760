"""Execute a notebook in a fresh kernel and save it with its outputs.

python scripts/execute_notebook.py notebooks/quickstart.ipynb executed.ipynb
"""

from __future__ import annotations

import sys

import nbformat
from nbclient import NotebookClient


def main(source: str, target: str) -> None:
    nb = nbformat.read(source, as_version=4)
    # Without the live chart's widget state, nbconvert, nbviewer and GitHub show its picture;
    # with it, an HTML export draws the chart only where it can load widget scripts from the web.
    NotebookClient(nb, kernel_name="python3", timeout=600, store_widget_state=False).execute()
    nbformat.write(nb, target)


if __name__ == "__main__":
    main(*sys.argv[1:3])
