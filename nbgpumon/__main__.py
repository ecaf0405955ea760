"""``python -m nbgpumon report PATH -o report.html``: a recording as a self-contained HTML page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nbgpumon",
        description="Write an nbgpumon recording (made with %gpumon record PATH) as one "
        "HTML page that opens without a network: python -m nbgpumon report PATH -o report.html",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="write a recording as one HTML page")
    report.add_argument("path", help="the SQLite file %%gpumon record wrote")
    report.add_argument("-o", "--output", default="report.html", help="the HTML file to write")
    report.add_argument("--session", type=int, default=None, help="session id (default: newest)")
    args = parser.parse_args(argv)

    from ._api.recorded import load_recorded as load

    try:
        session = load(args.path, args.session)
    except (OSError, ValueError) as exc:
        print(f"nbgpumon: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a file that is not a recording: one line, not a traceback
        print(f"nbgpumon: cannot read {args.path} as a recording: {exc}", file=sys.stderr)
        return 1
    if session.damage:  # a file cut short: say what is missing, then write what was read
        print(f"nbgpumon: {session.damage}", file=sys.stderr)
    out = Path(args.output)
    out.write_text(session.report_html(), encoding="utf-8")
    print(f"nbgpumon: wrote {out} (session {session.session_id}, {len(session.records)} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
