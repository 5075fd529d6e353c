"""Kafka harness: the jars of Spark's Kafka source and of a Kafka broker, fetched by Maven into a cache keyed by
version (`make kafka-jars`), and found there by the local broker and the Spark sessions."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

from daedalus_spark.buildcache import JarsMissing, cache_root, fill_once, is_complete

KAFKA_VERSION = "4.1.1"  # the local broker's Apache Kafka (KRaft); Spark's connector brings its own kafka-clients
FETCH_COMMAND = "make kafka-jars"
POM_DIR = Path(__file__).resolve().parents[2] / "deploy" / "jars"
_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+)-\d+(?:\.\d+)+(?:-[\w.]+)?\.jar$")  # a version has a dot


def spark_version() -> str:
    """The installed PySpark's version: Spark's Kafka connector must be the same one."""
    return version("pyspark")


def connector_dir(spark: str | None = None) -> Path:
    return cache_root() / f"spark-kafka-{spark or spark_version()}"


def broker_dir(kafka: str = KAFKA_VERSION) -> Path:
    return cache_root() / f"kafka-{kafka}"


def _complete(folder: Path, what: str) -> Path:
    if not is_complete(folder):
        raise JarsMissing(f"{what} not found in {folder}: run `{FETCH_COMMAND}` (Maven) first")
    return folder


def artifact_name(jar: str) -> str:
    """`kafka-clients-3.9.2.jar` -> `kafka-clients`: the jar's artifact without its version."""
    match = _VERSIONED_JAR.match(jar)
    return match.group("artifact") if match else jar.removesuffix(".jar")


def connector_jars(spark_jars: Path | None = None, spark: str | None = None) -> list[Path]:
    """The connector (of PySpark's version, or of `spark` with that Spark's `spark_jars`) and the dependencies Spark
    itself lacks (kafka-clients, commons-pool2, ...): a second Scala, Hadoop or SLF4J beside Spark's own would only
    shadow or clash, so jars whose artifact Spark ships are left out."""
    folder = _complete(connector_dir(spark), f"Spark's Kafka connector {spark or spark_version()}")
    if spark_jars is None:
        import pyspark

        spark_jars = Path(pyspark.__file__).parent / "jars"
    shipped = {artifact_name(jar.name) for jar in spark_jars.glob("*.jar")}
    return sorted(jar for jar in folder.glob("*.jar") if artifact_name(jar.name) not in shipped)


def spark_jars_conf() -> dict[str, str]:
    """`spark.jars` for a session reading or writing Kafka (the driver and executors of this machine)."""
    return {"spark.jars": ",".join(str(jar) for jar in connector_jars())}


def broker_classpath(kafka: str = KAFKA_VERSION) -> str:
    folder = _complete(broker_dir(kafka), f"the Kafka {kafka} broker's jars")
    return str(folder / "*")


def java() -> str:
    """The `java` to start the broker with: $JAVA_HOME/bin/java, else the one on the PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).is_file():
        raise JarsMissing("java not found (JAVA_HOME or PATH): the local Kafka broker needs Java 17")
    return found


def fetch(pom: Path, folder: Path, properties: dict[str, str], *, mvn: str = "mvn") -> bool:
    """Copy `pom`'s runtime dependencies into `folder` with Maven, unless a complete copy is there; True if fetched."""

    def copy_dependencies(partial: Path) -> str:
        if shutil.which(mvn) is None:
            raise JarsMissing(f"{mvn} not found on the PATH: `{FETCH_COMMAND}` fetches the jars with Maven")
        defines = [f"-D{key}={value}" for key, value in properties.items()]
        command = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(pom), "dependency:copy-dependencies"]
        command += ["-DincludeScope=runtime", f"-DoutputDirectory={partial}", *defines]
        subprocess.run(command, check=True)  # noqa: S603 - our own arguments, no shell
        return " ".join(f"{k}={v}" for k, v in properties.items()) + "\n"

    return fill_once(folder, copy_dependencies)


def fetch_connector(spark: str, scala: str = "2.13", pom_dir: Path = POM_DIR) -> str:
    """Spark's Kafka connector for Spark `spark` built on Scala `scala`; returns one line saying what was done."""
    properties = {"spark.version": spark, "scala.binary.version": scala}
    return _fetched(connector_dir(spark), fetch(pom_dir / "spark-kafka.xml", connector_dir(spark), properties))


def _fetched(folder: Path, fetched: bool) -> str:
    return f"{folder}: {'fetched' if fetched else 'cached'} ({len(list(folder.glob('*.jar')))} jars)"


def fetch_all(pom_dir: Path = POM_DIR) -> list[str]:
    """Spark's Kafka connector at PySpark's version and the Kafka broker; returns one line per folder."""
    broker = fetch(pom_dir / "kafka-broker.xml", broker_dir(), {"kafka.version": KAFKA_VERSION})
    return [fetch_connector(spark_version(), pom_dir=pom_dir), _fetched(broker_dir(), broker)]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m daedalus_spark.kafkacluster.jars", description=__doc__)
    p.add_argument("--pom-dir", type=Path, default=POM_DIR)
    args = p.parse_args(argv)
    for line in fetch_all(args.pom_dir):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
