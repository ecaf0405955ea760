"""A build hook that runs before hatch-jupyter-builder's: without npm it would end the build in
a long traceback ("Could not find cmd (npm) in path"); this says in one line what to install."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUNDLE = "nbgpumon/static/widget.js"  # jupyter-builder's ensured target and skip-if-exists
NO_NPM = (
    "nbgpumon: building the widget's front end needs Node.js >= 20 with npm, and npm is not on "
    "PATH: install them (apt-get install nodejs npm, or from nodejs.org), or install a wheel "
    "built where they are (pip wheel . --no-deps -w dist/)"
)


class NpmCheck(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        # The wheel and the sdist both ship the bundle; with npm, jupyter-builder builds it.
        if self.target_name not in ("wheel", "sdist") or shutil.which("npm"):
            return
        if (Path(self.root) / BUNDLE).is_file():
            # built already (a clone that ran npm, or an unpacked sdist): a standard build
            # skips npm anyway, an editable one would not
            os.environ["SKIP_JUPYTER_BUILDER"] = "1"
            return
        raise SystemExit(NO_NPM)  # printed as it is, with no traceback
