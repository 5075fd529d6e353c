"""The bad-input probe's commands: configs `validate-config` must refuse, `run` on paths that can never work and
stopped by signals, `report`'s output, `capacity`, `forecast` and `simulate` on odd input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from bad_input.harness import CLI, PY, ROOT, Outcome, base, cli, write_config
from bad_input.stored import saved_store


def validate(**sections: dict) -> Callable[[Path], Outcome]:
    return lambda tmp: cli("validate-config", str(write_config(tmp, base(tmp, **sections))))


def validate_text(text: str) -> Callable[[Path], Outcome]:
    def run(tmp: Path) -> Outcome:
        path = tmp / "c.yaml"
        path.write_text(text)
        return cli("validate-config", str(path))

    return run


def sidecar(
    prepare: Callable[[Path], dict] | None = None,
    *,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
    life_s: float = 20.0,
    interrupt_after_s: float | None = None,
) -> Callable[[Path], Outcome]:
    """`run` as a subprocess: refused at start (exits by itself), or started (stopped with SIGTERM after life_s)."""

    def run(tmp: Path) -> Outcome:
        data = prepare(tmp) if prepare else base(tmp)
        config = write_config(tmp, data)
        p = subprocess.Popen(
            [PY, "-m", CLI, "run", "--config", str(config), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        )
        note = ""
        try:
            if interrupt_after_s is not None:
                time.sleep(interrupt_after_s)
                p.send_signal(signal.SIGINT)
                out, err = p.communicate(timeout=30)
                return Outcome(0 if p.returncode in (0, 130, -2, 2) else p.returncode, out, err, "interrupted")
            out, err = p.communicate(timeout=life_s)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            try:
                out, err = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                return Outcome(None, out, err, "did not stop on SIGTERM")
            note = "started and ran until stopped"
            return Outcome(0, out, err, note)
        return Outcome(p.returncode, out, err, note)

    return run


def decision_log_into(name: str, content: str) -> Callable[[Path], Outcome]:
    def prepare(tmp: Path) -> dict:
        (tmp / name).write_text(content)
        return base(tmp, runtime={"decision_log": str(tmp / name)})

    run = sidecar(prepare)

    def guarded(tmp: Path) -> Outcome:
        o = run(tmp)
        if o.code == 0 and (tmp / name).read_text() != content:
            o.note = f"appended decision lines to {name}"
        return o

    return guarded


def csv_pair(header: str) -> Callable[[Path], Outcome]:
    def run(tmp: Path) -> Outcome:
        rows = "".join(f"{i},0.{i % 9 + 1},0.{(i + 3) % 9 + 1}\n" for i in range(30))
        (tmp / "u.csv").write_text(header + "\n" + rows)
        rows = "".join(f"{i},{100 * (i % 9 + 1)},{100 * ((i + 3) % 9 + 1)}\n" for i in range(30))
        (tmp / "t.csv").write_text(header + "\n" + rows)
        return cli("capacity", "--utilization", str(tmp / "u.csv"), "--throughput", str(tmp / "t.csv"))

    return run


def symlink_out(tmp: Path) -> Outcome:
    make = saved_store(tmp)
    out = tmp / "out"
    out.mkdir()
    victim = tmp / "victim.txt"
    victim.write_text("precious\n")
    (out / "index.html").symlink_to(victim)
    o = cli("report", "--knowledge", str(make), "--out", str(out))
    if victim.read_text() != "precious\n":
        return Outcome(0, o.out, o.err, "report --out wrote through a symlink into victim.txt")
    return o


def forecast_scale(tmp: Path) -> Outcome:
    """The bundled WordCount trace ×1 and ×1e6 (whole numbers both): accuracy must not depend on the scale alone."""
    source = ROOT / "workloads" / "traces" / "wordcount_sine_40000_6h.csv"
    lines = source.read_text().splitlines()[1:]
    scores = []
    for factor in (1, 1_000_000):
        path = tmp / f"trace{factor}.txt"
        path.write_text("".join(f"{s}|{int(c) * factor}\n" for s, c in (line.split("|") for line in lines)))
        o = cli("forecast", "evaluate", "--trace", str(path), "--json", timeout_s=1800)
        if o.code != 0:
            return o
        scores.append(json.loads(o.out)["wape_median"])
    return Outcome(0, json.dumps(scores), "", f"p50 WAPE ×1 {scores[0]:.2%}, ×1e6 {scores[1]:.2%}")


def forecast_scale_check(o: Outcome) -> str:
    a, b = json.loads(o.out)
    # Not bit-identical: the optimizer meets numbers that differ in their last bits. A tenth apart is the same.
    return "" if abs(a - b) <= 0.1 * max(a, b) else f"p50 WAPE {a:.2%} at ×1 but {b:.2%} at ×1e6"
