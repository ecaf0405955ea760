"""The notebook that tests/test_compare.py and tests/browser/test_compare_report.py record
twice: run A keeps 100 MiB of host memory in one cell, run B three times that and one more cell.
Each run ends with a cell that waits for three samples, so that its recording has a timeline to
draw however fast its cells ran."""

KEEP_A = "keep = np.ones(100 * 2**20 // 8)  # keeps 100 MiB of host memory"
KEEP_B = "keep = np.ones(3 * 100 * 2**20 // 8)  # keeps 300 MiB of host memory"
EXTRA = "extra = [n * n for n in range(1000)]"
SAMPLED = (
    "import time, nbgpumon\n"
    "_mon, _until = nbgpumon.monitor(), time.monotonic() + 30\n"
    "_enough = _mon.data.cursor + 3\n"
    "while _mon.data.cursor < _enough and time.monotonic() < _until:\n"
    "    time.sleep(0.02)"
)

# What the flagged cell's reason says: B keeps three times A's 100 MiB, each give or take the
# few MiB of resident memory a kernel's own work adds to a cell (A measured 102 MiB once, which
# reads "×2.9 (+198 MiB)"): ×2.9 to ×3.1, and 190 to 210 MiB more.
THREE_TIMES_KEPT = r"host kept ×(2\.9|3\.0|3\.1) \(\+(19\d|20\d|210) MiB\)"
