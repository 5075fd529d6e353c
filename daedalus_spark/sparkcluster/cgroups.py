"""Execute (test harness): per-worker CPU budgets with a cgroup (v2 `cpu.max`, or v1 `cpu.cfs_quota_us`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

V2_ROOT = Path("/sys/fs/cgroup")
V1_ROOT = Path("/sys/fs/cgroup/cpu")
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
        return cls(path, version)

    def add_self(self) -> None:
        """Move the calling process in (used between fork and exec)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def remove(self) -> None:
        try:
            self.path.rmdir()
        except OSError:
            pass  # still has processes or already gone; the caller killed what it started
