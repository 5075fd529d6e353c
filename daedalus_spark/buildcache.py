"""Infrastructure: the cache folder for what the project's set-up fetches and builds (jars, Go binaries, the agent
plugin), keyed by version, and the error that names the command bringing what is missing."""

from __future__ import annotations

import os
from pathlib import Path


class JarsMissing(RuntimeError):
    """What a test or the demo needs is not in the cache (or Java is not installed): says which command brings it."""


def cache_root() -> Path:
    """$DAEDALUS_SPARK_CACHE, else $XDG_CACHE_HOME/daedalus-spark, else ~/.cache/daedalus-spark."""
    if explicit := os.environ.get("DAEDALUS_SPARK_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "daedalus-spark"
