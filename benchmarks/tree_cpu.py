"""Benchmark helper: the CPU a process tree uses over time (e.g. `make demo` with everything it started), beside the
whole machine's, from /proc — what is left of the machine's cores for the rest.

  python benchmarks/tree_cpu.py --root-pid PID [--period-s 5] > cpu.tsv   # until PID exits

Each line: seconds since start, cores used by the tree (every descendant of PID, Spark workers and their executors
included), cores busy on the whole machine, the machine's cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def tree_ticks(root: int) -> dict[int, int]:
    """utime + stime (clock ticks) of `root` and every descendant alive now."""
    ticks, todo = {}, [root]
    while todo:
        pid = todo.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks[pid] = int(fields[11]) + int(fields[12])
        todo += children(pid)
    return ticks


def machine_busy() -> tuple[int, int]:
    parts = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = parts[3] + parts[4]
    return sum(parts) - idle, sum(parts)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root-pid", type=int, required=True)
    p.add_argument("--period-s", type=float, default=5.0)
    args = p.parse_args()
    cores = os.cpu_count() or 1
    start, before, (busy0, all0) = time.monotonic(), tree_ticks(args.root_pid), machine_busy()
    print("t_s\ttree_cores\tmachine_busy_cores\tcores", flush=True)
    while Path(f"/proc/{args.root_pid}").exists():
        time.sleep(args.period_s)
        now, (busy1, all1) = tree_ticks(args.root_pid), machine_busy()
        used = sum(t - before.get(pid, 0) for pid, t in now.items()) / TICKS / args.period_s
        machine = (busy1 - busy0) / max(all1 - all0, 1) * cores
        print(f"{time.monotonic() - start:.0f}\t{used:.2f}\t{machine:.2f}\t{cores}", flush=True)
        before, busy0, all0 = now, busy1, all1
    return 0


if __name__ == "__main__":
    sys.exit(main())
