"""Infrastructure: the cache folder for what the project's set-up fetches and builds (jars, Go binaries, the agent
plugin), keyed by version, filled once through a sibling folder, and the error that names the command bringing what
is missing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

COMPLETE = ".complete"  # written last, inside the folder: a folder without it is a fill that did not finish
_PARTIAL = ".partial-"  # `<folder>.partial-<pid>`: the sibling a process fills before renaming it into place


class JarsMissing(RuntimeError):
    """What a test or the demo needs is not in the cache (or Java is not installed): says which command brings it."""


def cache_root() -> Path:
    """$DAEDALUS_SPARK_CACHE, else $XDG_CACHE_HOME/daedalus-spark, else ~/.cache/daedalus-spark."""
    if explicit := os.environ.get("DAEDALUS_SPARK_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "daedalus-spark"


def is_complete(folder: Path) -> bool:
    return (folder / COMPLETE).is_file()


def fill_once(folder: Path, fill: Callable[[Path], str]) -> bool:
    """Make `folder` complete with `fill`, unless it is already; True if this call filled it.

    `fill` gets an empty `<folder>.partial-<pid>` sibling to fill and returns the text of the completion mark. The
    mark is written into that sibling, which is then renamed into place: an interrupted or failed fill (any
    exception, Ctrl-C included) leaves neither a half folder nor its sibling. Siblings left by processes that no
    longer exist are removed first; a concurrent fill that finished first is kept and this one's discarded."""
    if is_complete(folder):
        return False
    _remove_stale_partials(folder)
    partial = folder.with_name(f"{folder.name}{_PARTIAL}{os.getpid()}")
    partial.mkdir(parents=True)
    try:
        mark = fill(partial)
        (partial / COMPLETE).write_text(mark)
        return _move_into_place(partial, folder)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _move_into_place(partial: Path, folder: Path) -> bool:
    """Rename the filled sibling to `folder`; False if another process completed `folder` meanwhile."""
    if is_complete(folder):
        return False
    shutil.rmtree(folder, ignore_errors=True)  # a folder without its mark: an old fill that did not finish
    try:
        partial.rename(folder)
    except OSError:
        if is_complete(folder):  # another process renamed its own fill in between
            return False
        raise
    return True


def _remove_stale_partials(folder: Path) -> None:
    """Remove the siblings of `folder` left by this process or by processes that are gone."""
    for partial in folder.parent.glob(f"{folder.name}{_PARTIAL}*"):
        pid = partial.name.removeprefix(f"{folder.name}{_PARTIAL}")
        if pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            shutil.rmtree(partial, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
