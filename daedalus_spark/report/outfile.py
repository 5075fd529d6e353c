"""Report (edge): an output file written whole and renamed into place, so a symlink named like it is never followed."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def replace_file(path: Path, data: bytes) -> None:
    """Write `data` as `path`. A regular file, a symlink (even one to a file elsewhere) or nothing there: a new file
    in the same directory renamed over the name, so the link itself is replaced and a reader never sees half a file.
    A character device or a pipe (/dev/stdout, /dev/null, a FIFO): written through, it is a stream. A block device
    is refused."""
    try:
        mode = os.stat(path).st_mode  # follows a link: what writing through it would reach
    except (FileNotFoundError, NotADirectoryError):
        mode = 0
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        with path.open("wb") as stream:
            stream.write(data)
        return
    if stat.S_ISBLK(mode):
        raise OSError(f"{path}: a block device, not an output file")
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
