"""Progress of long work: a bar with its ETA on a terminal, one line when done elsewhere."""

from __future__ import annotations

import io

import pytest

from daedalus_spark.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "bar", "line"),
    [
        pytest.param(Terminal(), True, False, id="terminal-bar-with-eta"),
        pytest.param(io.StringIO(), False, True, id="pipe-one-line-when-done"),
    ],
)
def test_progress_is_a_bar_on_a_terminal_and_a_line_elsewhere(stream: io.StringIO, bar: bool, line: bool) -> None:
    progress = Progress(stream, "trace.csv", 4, "runs")
    for done in (0.5, 1.0, 2.5, 2.0, 4.0):  # a step back (2.0 after 2.5) is ignored
        progress.advance_to(done, "hpa:0.8")
    progress.close()
    text = stream.getvalue()
    assert ("100%|" in text and "hpa:0.8" in text and "<" in text) is bar
    assert text.endswith(" s\n") and "trace.csv: 4/4 runs in " in text if line else "runs in" not in text
