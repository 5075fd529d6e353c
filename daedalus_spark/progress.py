"""Edge support: the progress of long work (simulate, tune) — on a terminal tqdm's bar with its rate and ETA, redrawn
in place; elsewhere (a CI log, a pipe) no bar but one line when the work is done."""

from __future__ import annotations

import time
from typing import TextIO

from tqdm import tqdm

BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {postfix} [{elapsed}<{remaining}]"


class Progress:
    """Work of `total` units (a fraction of one counts) under `label`."""

    def __init__(self, stream: TextIO, label: str, total: float, unit: str) -> None:
        self._stream, self._label, self._total, self._unit = stream, label, total, unit
        self._tty = bool(getattr(stream, "isatty", lambda: False)())
        self._bar = tqdm(total=total, desc=label, file=stream, disable=not self._tty, bar_format=BAR_FORMAT, leave=True)
        self._started_s = time.monotonic()
        self._done = 0.0

    def advance_to(self, done: float, note: str = "") -> None:
        """`done` units are finished (never fewer than before); `note` names what runs now."""
        if note:
            self._bar.set_postfix_str(note, refresh=False)
        if done > self._done:
            self._bar.update(done - self._done)
            self._done = done

    def close(self) -> None:
        self._bar.close()
        if not self._tty:
            elapsed_s = time.monotonic() - self._started_s
            self._stream.write(f"{self._label}: {self._done:g}/{self._total:g} {self._unit} in {elapsed_s:.0f} s\n")
            self._stream.flush()
