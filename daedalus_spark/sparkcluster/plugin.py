"""Execute (JVM agent) harness: the driver plugin's jars, built by Maven from jvm/ for each Spark line, and a Spark
3.5 runtime (PySpark's distribution) to run them on, all cached by version outside the tree (`make jvm-plugin`)."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from types import MappingProxyType

from daedalus_spark.buildcache import JarsMissing, cache_root, fill_once, is_complete
from daedalus_spark.httpserve import free_port
from daedalus_spark.kafkacluster import jars

BUILD_COMMAND = "make jvm-plugin"
JVM_DIR = Path(__file__).resolve().parents[2] / "jvm"
PLUGIN_CLASS = "daedalus.spark.plugin.DaedalusPlugin"
EXAMPLE_JOB_CLASS = "daedalus.spark.example.RateCount"
# The newest Spark 3.5 (Scala 2.12) whose PySpark distribution and Kafka connector are both served (the connector of
# 3.5.8 and 3.5.9 is not on Maven Central here; a driver and its connector must be one version).
SPARK_35 = "3.5.7"


@dataclass(frozen=True)
class SparkLine:
    """One Spark line the plugin is built for: the Maven profile and the Spark version it compiles against."""

    name: str
    profile: str
    spark: str
    scala: str


def spark_lines() -> dict[str, SparkLine]:
    """Spark 3.5 and the 4.x line of the installed PySpark."""
    current = version("pyspark")
    return {
        "3.5": SparkLine("3.5", "spark-3.5", SPARK_35, "2.12"),
        "4": SparkLine("4", "spark-4", current if current.startswith("4.") else "4.2.0", "2.13"),
    }


def source_digest(jvm_dir: Path = JVM_DIR) -> str:
    """A digest of the plugin's sources and pom: a changed source is a different cache entry."""
    digest = hashlib.sha256()
    for path in sorted([jvm_dir / "pom.xml", *(jvm_dir / "src").rglob("*.java")]):
        digest.update(path.relative_to(jvm_dir).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def plugin_dir(line: SparkLine, jvm_dir: Path = JVM_DIR) -> Path:
    return cache_root() / f"agent-plugin-{source_digest(jvm_dir)}" / f"spark-{line.spark}"


def plugin_jar(line_name: str = "4") -> Path:
    """The built plugin jar for a Spark line (which also holds the example job), or JarsMissing naming the command."""
    line = spark_lines()[line_name]
    folder = plugin_dir(line)
    jar = folder / "daedalus-spark-plugin.jar"
    if not is_complete(folder) or not jar.is_file():
        raise JarsMissing(f"the agent plugin for Spark {line.spark} is not built in {folder}: run `{BUILD_COMMAND}`")
    return jar


def runtime_dir(spark: str = SPARK_35) -> Path:
    return cache_root() / f"pyspark-{spark}"


def spark_home(line_name: str = "4") -> Path:
    """SPARK_HOME of a Spark line: the installed PySpark for 4.x, the cached PySpark 3.5 distribution for 3.5."""
    if line_name != "3.5":
        import pyspark

        return Path(pyspark.__file__).parent
    folder = runtime_dir()
    if not is_complete(folder):
        raise JarsMissing(f"the Spark {SPARK_35} runtime is not in {folder}: run `{BUILD_COMMAND}`")
    return folder / "pyspark"


def build(line: SparkLine, *, jvm_dir: Path = JVM_DIR, mvn: str = "mvn") -> bool:
    """Build the plugin for one line into its cache folder, unless a complete build is there; True if built."""

    def package(partial: Path) -> str:
        if shutil.which(mvn) is None:
            raise JarsMissing(f"{mvn} not found on the PATH: `{BUILD_COMMAND}` builds the plugin with Maven")
        command = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(jvm_dir / "pom.xml"), "-P", line.profile]
        command += [f"-Dspark.version={line.spark}", f"-Ddaedalus.build.dir={partial / 'build'}", "package"]
        subprocess.run(command, check=True)  # noqa: S603 - our own arguments, no shell
        (jar,) = (partial / "build").glob("daedalus-spark-plugin-*.jar")
        shutil.copy2(jar, partial / "daedalus-spark-plugin.jar")
        shutil.rmtree(partial / "build")
        return f"spark={line.spark} profile={line.profile}\n"

    return fill_once(plugin_dir(line, jvm_dir), package)


def install_runtime(spark: str = SPARK_35) -> bool:
    """PySpark `spark` (its bin/ and jars/ are a Spark distribution) into the cache, unless there; True if installed."""

    def pip_install(partial: Path) -> str:
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(partial), f"pyspark=={spark}"]
        subprocess.run(command, check=True)  # noqa: S603 - our own arguments, no shell
        return f"pyspark=={spark}\n"

    return fill_once(runtime_dir(spark), pip_install)


@dataclass
class SubmittedJob:
    """A driver started by spark-submit (client mode) in its own process group, with its agent's URL; `stop` asks it
    to end through its stop file and kills what is left after a deadline."""

    process: subprocess.Popen[bytes]
    stop_file: Path
    agent_url: str
    ui_url: str
    log: Path

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout_s: float = 60.0) -> None:
        self.stop_file.touch()
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(self.process, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                _kill_group(self.process, signal.SIGKILL)
                self.process.wait(timeout=15)


def _kill_group(process: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


def submit(
    home: str | Path,
    app: Sequence[str],
    *,
    master: str,
    workdir: Path,
    conf: Mapping[str, str] = MappingProxyType({}),
    jars: Sequence[Path] = (),
    env: Mapping[str, str] = MappingProxyType({}),
    agent_port: int,
) -> SubmittedJob:
    """spark-submit `app` (`--class X jar args…` or `script.py args…`) from the Spark at `home`; the driver's UI
    and the agent listen on 127.0.0.1 (the agent on `agent_port`, which the caller sets in `conf` or the app)."""
    ui_port = free_port()
    settings = {
        "spark.driver.host": "127.0.0.1",
        "spark.ui.port": str(ui_port),
        "spark.ui.showConsoleProgress": "false",
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.sql.shuffle.partitions": "2",
        **conf,
    }
    command = [str(Path(home) / "bin" / "spark-submit"), "--master", master]
    if jars:
        command += ["--jars", ",".join(str(j) for j in jars)]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    command += list(app)
    stop_file = workdir / "stop"
    log = workdir / "driver.log"
    environment = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", **env)
    with open(log, "wb") as out:
        process = subprocess.Popen(  # noqa: S603 - our own arguments, no shell
            command, env=environment, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=workdir
        )
    return SubmittedJob(process, stop_file, f"http://127.0.0.1:{agent_port}", f"http://127.0.0.1:{ui_port}", log)


# Graceful scale-in: executors asked to leave finish their tasks and hand their shuffle and cached blocks over first.
DECOMMISSION_CONF = MappingProxyType(
    {
        "spark.decommission.enabled": "true",
        "spark.storage.decommission.enabled": "true",
        "spark.storage.decommission.shuffleBlocks.enabled": "true",
        "spark.storage.decommission.rddBlocks.enabled": "true",
    }
)


def plugin_conf(*, port: int, max_executors: int = 2, **more: str) -> dict[str, str]:
    """The settings that attach the plugin: `spark.plugins` and the agent's own (`more` as `scaleIn="kill"`)."""
    conf = {
        "spark.plugins": PLUGIN_CLASS,
        "spark.daedalus.agent.port": str(port),
        "spark.daedalus.agent.maxExecutors": str(max_executors),
        "spark.daedalus.agent.pollSeconds": "0.5",
    }
    conf.update({f"spark.daedalus.agent.{key}": value for key, value in more.items()})
    return conf


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m daedalus_spark.sparkcluster.plugin", description=__doc__)
    p.parse_args(argv)
    for line in spark_lines().values():
        built = build(line)
        print(f"{plugin_dir(line)}: {'built' if built else 'cached'}")
        print(jars.fetch_connector(line.spark, line.scala))  # the Kafka source of the line's jobs
    installed = install_runtime()
    print(f"{runtime_dir()}: {'installed' if installed else 'cached'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
