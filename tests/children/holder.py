"""A child process that says it holds GPU memory: it writes ``{"used": …, "sm": …}`` to
``$GPU_USE/<its pid>`` (what the fake NVML lists, tests/fake_nvml), holds it for a while,
takes it back and exits with the code it was given.

    python holder.py BYTES SM_PERCENT SECONDS [EXIT_CODE]
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> int:
    used, sm, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    code = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    path = os.path.join(os.environ["GPU_USE"], str(os.getpid()))
    with open(path + ".tmp", "w") as f:
        json.dump({"used": used, "sm": sm}, f)
    os.replace(path + ".tmp", path)  # (whole, never half written, when the fake reads it)
    time.sleep(seconds)
    os.remove(path)
    return code


if __name__ == "__main__":
    sys.exit(main())
