"""Knowledge report: the `report` subcommand's options, light to import; the knowledge loads when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("report", help="what a live or stopped controller knows, from its knowledge store")
    p.add_argument("--knowledge", type=Path, default=Path("daedalus-knowledge.sqlite"), help="the SQLite store")
    p.add_argument("--config", type=Path, default=None, help="the controller's config (capacity settings)")
    output = p.add_mutually_exclusive_group()  # --out writes report.json itself
    output.add_argument("--json", action="store_true", help="one strict JSON object")
    output.add_argument("--out", type=Path, default=None, help="write index.html, report.json and PNG plots here")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from daedalus_spark.report.knowledge_report import report

    return report(args)
