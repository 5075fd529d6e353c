"""Demo harness: start the pipeline, generator and controller as process groups, and always stop them all."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

# The exit status of a run stopped by Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within it, SIGTERM (a supervisor, `timeout`, `kill`) interrupts as Ctrl-C does, so that whatever was started
    is stopped on the way out. Only the main thread receives signals; elsewhere it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class Processes:
    """Started in their own sessions; `stop_all` ends them newest first (SIGTERM, then SIGKILL after a grace)."""

    log_dir: Path
    started: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(self, name: str, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (self.log_dir / f"{name}.log").open("ab")
        process = subprocess.Popen(  # noqa: S603 - our own arguments, no shell
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})},
        )
        self.started.append((name, process))
        return process

    def python(self, name: str, module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        return self.start(name, [sys.executable, "-m", module, *args], env)

    def run(self, name: str, module: str, *args: str, timeout_s: float) -> None:
        """Runs a Python module to its end, its output in `name`.log; an exit other than 0, or a run longer than
        `timeout_s`, is an error (the process is killed on the way out, also on Ctrl-C)."""
        with (self.log_dir / f"{name}.log").open("ab") as log:
            done = subprocess.run(  # noqa: S603 - our own arguments, no shell
                [sys.executable, "-m", module, *args], stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s
            )
        if done.returncode != 0:
            raise RuntimeError(f"{name} exited with {done.returncode}; see {self.log_dir / (name + '.log')}")

    def stop(self, process: subprocess.Popen[bytes], grace_s: float = 20.0) -> int | None:
        """SIGTERM the process group, wait, SIGKILL what is left; returns the exit code."""
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        _kill_group(process.pid)  # children that outlived the leader (a driver's JVM)
        return process.poll()

    def stop_all(self) -> None:
        for _, process in reversed(self.started):
            self.stop(process)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
