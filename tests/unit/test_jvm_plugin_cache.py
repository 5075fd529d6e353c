"""The JVM plugin's cache: keyed by Spark version and a digest of jvm/'s sources; a missing build names its command."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from daedalus_spark.buildcache import JarsMissing
from daedalus_spark.sparkcluster import plugin

JVM = Path(plugin.__file__).resolve().parents[2] / "jvm"


def test_a_missing_build_or_runtime_names_make_jvm_plugin(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DAEDALUS_SPARK_CACHE", str(tmp_path))
    for call in (lambda: plugin.plugin_jar("4"), lambda: plugin.plugin_jar("3.5"), lambda: plugin.spark_home("3.5")):
        with pytest.raises(JarsMissing, match="make jvm-plugin"):
            call()


def test_each_line_and_each_source_change_has_its_own_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DAEDALUS_SPARK_CACHE", str(tmp_path / "cache"))
    copy = tmp_path / "jvm"
    shutil.copytree(JVM, copy, ignore=shutil.ignore_patterns("target"))
    lines = plugin.spark_lines()
    assert {lines["3.5"].profile, lines["4"].profile} == {"spark-3.5", "spark-4"}
    before = {name: plugin.plugin_dir(line, copy) for name, line in lines.items()}
    assert before["3.5"] != before["4"] and before["3.5"].parent == before["4"].parent
    source = next((copy / "src" / "main").rglob("Targets.java"))
    source.write_text(source.read_text() + "\n")
    assert plugin.plugin_dir(lines["4"], copy).parent != before["4"].parent


def test_the_plugin_conf_attaches_the_plugin_and_prefixes_the_agent_settings() -> None:
    conf = plugin.plugin_conf(port=9100, max_executors=3, scaleIn="kill")
    assert conf["spark.plugins"] == plugin.PLUGIN_CLASS == "daedalus.spark.plugin.DaedalusPlugin"
    assert conf["spark.daedalus.agent.port"] == "9100" and conf["spark.daedalus.agent.maxExecutors"] == "3"
    assert conf["spark.daedalus.agent.scaleIn"] == "kill"
    assert (JVM / "src/main/java/daedalus/spark/plugin/DaedalusPlugin.java").is_file()
