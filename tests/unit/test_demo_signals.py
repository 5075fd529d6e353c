"""Unit: the demo harness stops what it started on SIGTERM as on Ctrl-C (`sigterm_interrupts`)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from daedalus_spark.demo.processes import sigterm_interrupts


def test_sigterm_within_it_interrupts_and_the_handler_is_restored_after() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt, match="signal 15"), sigterm_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5.0)  # the handler runs at the next bytecode; this waits for it, at most 5 s
    assert signal.getsignal(signal.SIGTERM) is before


def test_outside_the_main_thread_it_changes_nothing() -> None:
    seen: list[object] = []

    def run() -> None:
        with sigterm_interrupts():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=30)
    assert seen == [before]
