"""Probe: bad input against every command, the sidecar's HTTP endpoint and the stored fields, each outcome classified.

Run before and after a fix; the counts go to docs/hardening.md:

    .venv/bin/python probes/bad_input_probe.py [--only PREFIX] [--verbose]

Classes: ok (good input did the right thing), clear (refused: exit 2, one line naming the problem), misleading
(refused, but the line does not name the problem, or a good input refused), traceback, silent (exit 0 or went on
with a wrong result, or a secret in any output), hang (no answer within the case's limit).
Commands run as subprocesses (`run` must start and be stopped); stored fields and the runtime run in-process.
The cases live in bad_input/, by what they feed: harness.py classifies, cases.py lists them.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from bad_input.cases import cases
from bad_input.harness import CLASSES, run_case


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run only cases whose id starts with this")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    selected = [c for c in cases() if c.id.startswith(args.only)]
    # Subprocess cases in parallel; in-process ones (they share the root logger) one at a time.
    in_process = ("runtime/", "store/", "http/", "scrape/")
    with ThreadPoolExecutor(args.jobs) as pool:
        done = list(pool.map(run_case, [c for c in selected if not c.id.startswith(in_process)]))
    done += [run_case(c) for c in selected if c.id.startswith(in_process)]
    for case in done:
        print(
            f"{case.result:10} {case.id:42} {case.detail if args.verbose or case.result not in ('ok', 'clear') else ''}"
        )
    counts = Counter(c.result for c in done)
    print(f"\n{len(done)} cases: " + ", ".join(f"{counts[k]} {k}" for k in CLASSES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
