"""Cost of a recording's file identity check, once a batch (target <= 50 µs).

Before each batch (every ``FLUSH_INTERVAL``, 0.5 s, on the writer's thread, never per sampler
tick) the writer checks that its path still names the file it opened (``FileIdentity.check``:
two ``stat`` calls, and the ``-wal`` and ``-shm`` beside it until both are known). Timed here on
a recording's file with its ``-wal`` and ``-shm`` beside it, in ``--dir`` (default: a temporary
folder): the median of many checks against 1/10,000 of the flush interval.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import result_file
import stats

from nbgpumon._recording.file_identity import SAME, FileIdentity
from nbgpumon._recording.writer import FLUSH_INTERVAL

TARGET_US = FLUSH_INTERVAL / 10_000 * 1e6


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checks", type=int, default=20_000, help="checks timed")
    parser.add_argument("--dir", type=Path, default=None, help="folder of the file checked")


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("identity_check", args)
    checks = 2_000 if args.quick else args.checks
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = Path(folder) / "run.sqlite"
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            name.write_bytes(b"")
        identity = FileIdentity(path)
        try:
            identity.check()  # the first notes the -wal and -shm: the batches after it are timed
            costs = []
            for _ in range(checks):
                began = time.perf_counter()
                said = identity.check()
                costs.append((time.perf_counter() - began) * 1e6)
                assert said == SAME, said
        finally:
            identity.close()
    d = stats.describe(costs)
    result.details["checks_us"] = d
    result.details["folder"] = str(args.dir or tempfile.gettempdir())
    result.log(f"{checks:,} checks: median {d['median']:.1f} µs, p99 {d['p99']:.1f} µs")
    result.add(
        "FileIdentity.check(), once a batch",
        d["median"],
        "µs",
        TARGET_US,
        note=f"p99 {d['p99']:.1f} µs, max {d['max']:.0f} µs over {d['n']:,} checks, "
        f"in {result.details['folder']}",
    )
    result.finish()


if __name__ == "__main__":
    main()
