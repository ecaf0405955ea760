"""The front-end bundle that the Python build produces (js/ -> nbgpumon/static/)."""

import re

from nbgpumon._views.widget.live_chart import BUNDLE, GPUMonWidget


def test_the_bundle_is_built_and_is_what_the_widget_loads():
    assert BUNDLE.exists(), "run the Python build (pip install -e .) or npm run build in js/"
    assert str(GPUMonWidget._esm) == BUNDLE.read_text()


def test_the_bundle_imports_nothing_from_the_network():
    code = BUNDLE.read_text()
    assert not re.search(r"""(import|from)\s*\(?\s*["']https?://""", code)
    assert "export" in code and "default" in code
