"""Command line (edge): the console script — Ctrl-C at any moment, even while the libraries load, is one line."""

from __future__ import annotations

import sys


def main() -> int:
    """`daedalus-spark` and `python -m daedalus_spark`: cli.main, with an interrupt during start-up (loading the
    libraries takes seconds; the sidecar handles SIGINT itself once it runs) or a long command ending as one line,
    exit 130."""
    try:
        from daedalus_spark.cli import main as cli_main

        return cli_main()
    except KeyboardInterrupt:
        print("daedalus-spark: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
