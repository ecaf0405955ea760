"""The pictures of the README and the guide, written by the browser tests that show them.

``scripts/pictures`` runs those tests with ``NBGPUMON_PICTURES`` naming a folder (``docs``);
each test, once it has asserted what its picture must show, saves it there as NAME.png. Without
the variable nothing is written outside tests/artifacts/. docs/development.md lists them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def picture_folder() -> Path | None:
    """Where scripts/pictures wants the pictures (relative to the repository), or None."""
    folder = os.environ.get("NBGPUMON_PICTURES", "")
    return (ROOT / folder) if folder else None


def save_picture(target: Any, name: str, **screenshot: Any) -> Path | None:
    """``target.screenshot(...)`` (a Playwright page or locator) into the pictures folder as
    NAME.png, when scripts/pictures asked for it; else nothing. Returns the path written."""
    folder = picture_folder()
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    target.screenshot(path=str(path), **screenshot)
    return path
