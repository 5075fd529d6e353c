"""Spark harness: per-worker CPU budgets and CPU time with cgroups (v2, or v1 cpu + cpuacct)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

V2_ROOT = Path("/sys/fs/cgroup")
V1_ROOT = Path("/sys/fs/cgroup/cpu")
V1_ACCT_ROOT = Path("/sys/fs/cgroup/cpuacct")  # a hierarchy of its own where cpu and cpuacct are not co-mounted
PERIOD_US = 100_000


def cpu_quota_support() -> str | None:
    """'v2' or 'v1' when a CPU quota can be set here (needs write access), else None."""
    if (V2_ROOT / "cgroup.controllers").exists() and "cpu" in (V2_ROOT / "cgroup.controllers").read_text().split():
        return "v2" if os.access(V2_ROOT, os.W_OK) else None
    if (V1_ROOT / "cpu.cfs_quota_us").exists() and os.access(V1_ROOT, os.W_OK):
        return "v1"
    return None


@dataclass
class CpuGroup:
    """One cgroup holding a worker and all processes it starts (executors, Python workers)."""

    path: Path
    version: str
    cpus: float = 1.0
    acct_path: Path | None = None  # v1: where CPU time is accounted (the cpu group itself when co-mounted)

    @classmethod
    def create(cls, name: str, cpus: float) -> CpuGroup | None:
        version = cpu_quota_support()
        if version is None:
            return None
        path = (V2_ROOT if version == "v2" else V1_ROOT) / name
        try:
            if version == "v2":
                subtree = V2_ROOT / "cgroup.subtree_control"
                if "cpu" not in subtree.read_text().split():
                    subtree.write_text("+cpu")
            path.mkdir(exist_ok=True)
            quota = int(cpus * PERIOD_US)
            if version == "v2":
                (path / "cpu.max").write_text(f"{quota} {PERIOD_US}")
            else:
                (path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                (path / "cpu.cfs_quota_us").write_text(str(quota))
        except OSError:
            return None
        return cls(path, version, cpus, _v1_accounting(path, name) if version == "v1" else None)

    @property
    def _paths(self) -> list[Path]:
        return [self.path] + ([self.acct_path] if self.acct_path not in (None, self.path) else [])

    def add_self(self) -> None:
        """Move the calling process in (used between fork and exec)."""
        for path in self._paths:
            (path / "cgroup.procs").write_text(str(os.getpid()))

    def usage_s(self) -> float | None:
        """CPU seconds used by every process in the group so far (None where it is not accounted)."""
        try:
            if self.version == "v2":
                stat = dict(line.split() for line in (self.path / "cpu.stat").read_text().splitlines() if line)
                return int(stat["usage_usec"]) / 1e6
            if self.acct_path is not None:
                return int((self.acct_path / "cpuacct.usage").read_text()) / 1e9
        except (OSError, KeyError, ValueError):
            return None
        return None

    def pids(self) -> list[int]:
        pids: set[int] = set()
        for path in self._paths:
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        return sorted(pids)

    def remove(self) -> None:
        for path in self._paths:
            with contextlib.suppress(OSError):  # still has processes or already gone; the caller killed what it started
                path.rmdir()


def _v1_accounting(cpu_path: Path, name: str) -> Path | None:
    if (cpu_path / "cpuacct.usage").exists():
        return cpu_path
    if not (V1_ACCT_ROOT / "cpuacct.usage").exists():
        return None
    try:
        (V1_ACCT_ROOT / name).mkdir(exist_ok=True)
    except OSError:
        return None
    return V1_ACCT_ROOT / name
