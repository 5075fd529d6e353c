"""The cache folder filled once: through a `<folder>.partial-<pid>` sibling renamed into place with its mark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from daedalus_spark.buildcache import COMPLETE, fill_once, is_complete


def _siblings(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.parent.iterdir())


def test_a_fill_is_renamed_into_place_with_its_mark(tmp_path) -> None:
    folder = tmp_path / "nested" / "tool-1.0"  # the parent need not exist yet
    seen: list[Path] = []

    def fill(partial: Path) -> str:
        seen.append(partial)
        assert partial.is_dir() and not any(partial.iterdir())
        (partial / "tool").write_text("binary")
        return "tool 1.0\n"

    assert fill_once(folder, fill) is True
    assert seen == [folder.with_name(f"tool-1.0.partial-{os.getpid()}")]
    assert (folder / "tool").read_text() == "binary" and (folder / COMPLETE).read_text() == "tool 1.0\n"
    assert _siblings(folder) == ["tool-1.0"]


@pytest.mark.parametrize("error", [RuntimeError("build failed"), KeyboardInterrupt()], ids=["error", "ctrl-c"])
def test_a_failed_or_interrupted_fill_leaves_nothing(tmp_path, error: BaseException) -> None:
    folder = tmp_path / "tool-1.0"

    def fill(partial: Path) -> str:
        (partial / "half").write_text("half")
        raise error

    with pytest.raises(type(error)):
        fill_once(folder, fill)
    assert list(tmp_path.iterdir()) == []


def test_a_complete_folder_is_kept_and_fill_never_runs(tmp_path) -> None:
    folder = tmp_path / "tool-1.0"
    folder.mkdir()
    (folder / COMPLETE).write_text("old\n")

    def fill(partial: Path) -> str:
        raise AssertionError("fill ran on a complete folder")

    assert fill_once(folder, fill) is False
    assert (folder / COMPLETE).read_text() == "old\n" and is_complete(folder)


def test_a_folder_without_its_mark_is_replaced(tmp_path) -> None:
    folder = tmp_path / "tool-1.0"
    folder.mkdir()
    (folder / "leftover").write_text("from a fill that did not finish")
    assert fill_once(folder, lambda partial: "new\n") is True
    assert sorted(path.name for path in folder.iterdir()) == [COMPLETE]


def _dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True)
    return int(done.stdout)


def test_the_partial_folder_of_a_process_that_is_gone_is_removed_and_a_live_one_kept(tmp_path) -> None:
    folder = tmp_path / "tool-1.0"
    dead = folder.with_name(f"tool-1.0.partial-{_dead_pid()}")
    live = folder.with_name(f"tool-1.0.partial-{os.getppid()}")  # our parent: alive, may still be filling
    other = tmp_path / "tool-1.01.partial-1"  # another folder's sibling: not ours to judge
    for partial in (dead, live, other):
        partial.mkdir()
        (partial / "half").write_text("half")
    assert fill_once(folder, lambda partial: "done\n") is True
    assert _siblings(folder) == ["tool-1.0", live.name, other.name]


def test_a_concurrent_fill_that_finished_first_is_kept(tmp_path) -> None:
    folder = tmp_path / "tool-1.0"

    def fill(partial: Path) -> str:
        folder.mkdir()  # another process renames its complete fill into place while this one works
        (folder / "tool").write_text("theirs")
        (folder / COMPLETE).write_text("theirs\n")
        (partial / "tool").write_text("ours")
        return "ours\n"

    assert fill_once(folder, fill) is False
    assert (folder / "tool").read_text() == "theirs" and _siblings(folder) == ["tool-1.0"]


def test_each_set_up_command_without_its_tool_names_it_and_leaves_nothing(tmp_path, monkeypatch) -> None:
    from daedalus_spark.buildcache import JarsMissing
    from daedalus_spark.kafkacluster import jars
    from daedalus_spark.kubecluster import bins
    from daedalus_spark.sparkcluster import plugin

    monkeypatch.setenv("DAEDALUS_SPARK_CACHE", str(tmp_path))
    with pytest.raises(JarsMissing, match="no-such-mvn not found on the PATH: `make kafka-jars`"):
        jars.fetch(jars.POM_DIR / "kafka-broker.xml", jars.broker_dir(), {"kafka.version": "0"}, mvn="no-such-mvn")
    with pytest.raises(bins.BinsMissing, match="no-such-go not found on the PATH: `make k8s-bins`"):
        bins._build(bins.etcd_dir(), module="m", version="0.0.0", packages={"etcd": "m"}, go="no-such-go")
    with pytest.raises(JarsMissing, match="no-such-mvn not found on the PATH: `make jvm-plugin`"):
        plugin.build(plugin.spark_lines()["4"], mvn="no-such-mvn")
    assert [path for path in tmp_path.rglob("*") if path.is_file() or ".partial-" in path.name] == []
