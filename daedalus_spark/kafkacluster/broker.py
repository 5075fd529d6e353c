"""Kafka harness: a single-node Kafka (KRaft, broker and controller in one JVM) on 127.0.0.1, started and stopped by
the project for its tests and the demo: free ports, a data folder per run, a bounded heap, topics made on demand."""

from __future__ import annotations

import atexit
import base64
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from daedalus_spark.httpserve import free_port
from daedalus_spark.kafkacluster.jars import KAFKA_VERSION, broker_classpath, java
from daedalus_spark.waiting import wait_until

_LOG4J = """rootLogger.level=WARN
rootLogger.appenderRef.out.ref=OUT
appender.out.type=Console
appender.out.name=OUT
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
"""


def cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe base64 without padding (as `kafka-storage random-uuid`), and
    like Kafka's own never starting with '-': the storage tool would take `-t -x...` for an option (1 in 64)."""
    while True:
        made = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not made.startswith("-"):
            return made


@dataclass(frozen=True)
class BrokerTls:
    """A broker's TLS identity: its PKCS#12 keystore and password, and the PEM certificate clients trust."""

    keystore: Path
    password: str
    ca_file: Path


def throwaway_tls(folder: Path, host: str = "127.0.0.1", *, days: int = 2) -> BrokerTls:
    """A self-signed certificate for `host` (and localhost), made with the JDK's keytool in `folder`: for tests."""
    keytool = shutil.which("keytool") or str(Path(java()).with_name("keytool"))
    if not Path(keytool).exists():
        raise RuntimeError(f"keytool not found beside {java()} nor on PATH: install a JDK (openjdk-17-jdk-headless)")
    folder.mkdir(parents=True, exist_ok=True)
    keystore, ca_file, password = folder / "broker.p12", folder / "ca.pem", uuid.uuid4().hex
    keystore.unlink(missing_ok=True)  # a fresh identity each time
    common = ["-alias", "broker", "-keystore", str(keystore), "-storetype", "PKCS12", "-storepass", password]
    for args in (
        [
            "-genkeypair",
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-validity",
            str(days),
            "-dname",
            f"CN={host}",
            "-ext",
            f"SAN=ip:{host},dns:localhost",
            "-keypass",
            password,
        ],
        ["-exportcert", "-rfc", "-file", str(ca_file)],
    ):
        done = subprocess.run(  # noqa: S603 - our own arguments, no shell
            [keytool, *args, *common], capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"keytool {args[0]} failed ({done.returncode}): {done.stderr or done.stdout}")
    return BrokerTls(keystore, password, ca_file)


@dataclass
class LocalKafka:
    """`with LocalKafka() as kafka: kafka.create_topic("orders", 8); ... kafka.bootstrap`.

    `tls` adds an SSL listener (`ssl_bootstrap`), and with `sasl_users` a SASL_SSL one too (`sasl_bootstrap`,
    mechanism PLAIN): what a user's secured Kafka asks of its clients. The admin calls here use the PLAINTEXT
    listener. `server_settings` adds or overrides server properties."""

    heap: str = "320m"
    host: str = "127.0.0.1"
    start_timeout_s: float = 120.0
    kafka_version: str = KAFKA_VERSION
    server_settings: Mapping[str, str] = field(default_factory=dict)
    tls: BrokerTls | None = None
    sasl_users: Mapping[str, str] = field(default_factory=dict)  # user -> password, for the SASL_SSL listener
    port: int = 0
    controller_port: int = 0
    ssl_port: int = 0
    sasl_port: int = 0
    _dir: Path | None = None
    _process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def ssl_bootstrap(self) -> str:
        if self.tls is None:
            raise RuntimeError("LocalKafka has no SSL listener: start it with tls=throwaway_tls(...)")
        return f"{self.host}:{self.ssl_port}"

    @property
    def sasl_bootstrap(self) -> str:
        if self.tls is None or not self.sasl_users:
            raise RuntimeError("LocalKafka has no SASL_SSL listener: start it with tls=... and sasl_users=...")
        return f"{self.host}:{self.sasl_port}"

    @property
    def log_path(self) -> Path:
        assert self._dir is not None, "LocalKafka not started"
        return self._dir / "broker.log"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _listeners(self) -> dict[str, int]:
        """Client listeners by name (= their security protocol) and port."""
        out = {"PLAINTEXT": self.port}
        if self.tls is not None:
            out["SSL"] = self.ssl_port
            if self.sasl_users:
                out["SASL_SSL"] = self.sasl_port
        return out

    def _security_settings(self) -> dict[str, str]:
        if self.tls is None:
            return {}
        settings = {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(self.tls.keystore),
            "ssl.keystore.password": self.tls.password,
            "ssl.key.password": self.tls.password,
        }
        if self.sasl_users:
            users = " ".join(f'user_{user}="{password}"' for user, password in self.sasl_users.items())
            settings["sasl.enabled.mechanisms"] = "PLAIN"
            settings["listener.name.sasl_ssl.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
            )
        return settings

    def _properties(self) -> str:
        assert self._dir is not None
        listeners = self._listeners()
        advertised = ",".join(f"{name}://{self.host}:{port}" for name, port in listeners.items())
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{self.host}:{self.controller_port}",
            "listeners": f"{advertised},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": advertised,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(
                [*(f"{name}:{name}" for name in listeners), "CONTROLLER:PLAINTEXT"]
            ),
            "log.dirs": str(self._dir / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            **self._security_settings(),
            **self.server_settings,
        }
        return "".join(f"{key}={value}\n" for key, value in settings.items())

    def _java(self, main: str, *args: str, log: Path) -> subprocess.Popen[bytes]:
        assert self._dir is not None
        command = [
            java(),
            f"-Xmx{self.heap}",
            f"-Xms{self.heap}",
            "-XX:+UseSerialGC",
            f"-Dlog4j2.configurationFile={self._dir / 'log4j2.properties'}",
            "-cp",
            broker_classpath(self.kafka_version),
            main,
            *args,
        ]
        out = log.open("ab")
        try:
            return subprocess.Popen(  # noqa: S603 - our own arguments, no shell
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        finally:
            out.close()

    def start(self) -> LocalKafka:
        """Format a fresh data folder and start the broker; returns when it answers an admin request."""
        if self._dir is not None:
            raise RuntimeError(f"LocalKafka on {self.bootstrap} is already started")
        java()  # a missing Java or missing jars fail here, before any folder or port is taken
        broker_classpath(self.kafka_version)
        self._dir = Path(tempfile.mkdtemp(prefix="daedalus-kafka-"))
        self.port, self.controller_port = self.port or free_port(), self.controller_port or free_port()
        if self.tls is not None:
            self.ssl_port = self.ssl_port or free_port()
            self.sasl_port = (self.sasl_port or free_port()) if self.sasl_users else 0
        atexit.register(self.stop)
        try:
            (self._dir / "server.properties").write_text(self._properties())
            (self._dir / "log4j2.properties").write_text(_LOG4J)
            formatting = self._java(
                "kafka.tools.StorageTool",
                "format",
                "-t",
                cluster_id(),
                "-c",
                str(self._dir / "server.properties"),
                log=self.log_path,
            )
            if formatting.wait(timeout=self.start_timeout_s) != 0:
                tail = self.log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"formatting Kafka's storage failed; {self.log_path} ends:\n{tail}")
            self._launch()
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(self) -> None:
        assert self._dir is not None
        self._process = self._java("kafka.Kafka", str(self._dir / "server.properties"), log=self.log_path)
        wait_until(
            self.answers,
            f"Kafka {self.kafka_version} answering on {self.bootstrap} (log {self.log_path})",
            self.start_timeout_s,
            interval_s=0.5,
            still_alive=self._alive,
        )

    def _alive(self) -> None:
        if self._process is None or self._process.poll() is not None:
            code = None if self._process is None else self._process.returncode
            tail = self.log_path.read_text(errors="replace")[-2000:] if self.log_path.exists() else ""
            raise RuntimeError(f"the Kafka broker exited ({code}); {self.log_path} ends:\n{tail}")

    def admin(self) -> Any:
        """A kafka-python admin client on this broker (the caller closes it)."""
        from kafka.admin import KafkaAdminClient

        return KafkaAdminClient(
            bootstrap_servers=self.bootstrap, client_id="daedalus-local-kafka", request_timeout_ms=10_000
        )

    def answers(self) -> bool:
        """The broker answers, and its group coordinator too (offset commits and group offsets work)."""
        try:
            admin = self.admin()
        except Exception:  # noqa: BLE001 - not up yet: kafka-python raises NoBrokersAvailable and others
            return False
        try:
            admin.describe_cluster()
            admin.list_group_offsets({"daedalus-local-kafka": None})  # CoordinatorNotAvailable until it is elected
            return True
        except Exception:  # noqa: BLE001 - same
            return False
        finally:
            admin.close()

    def create_topic(self, topic: str, partitions: int, *, timeout_s: float = 60.0) -> None:
        """Create `topic` with `partitions` partitions and wait until every one has a leader."""
        if partitions < 1:
            raise ValueError(f"topic {topic!r}: partitions must be >= 1, got {partitions}")
        admin = self.admin()
        try:
            admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1}})
            admin.wait_for_topics([topic], timeout_ms=int(timeout_s * 1000))
        finally:
            admin.close()

    def add_partitions(self, topic: str, total: int, *, timeout_s: float = 60.0) -> None:
        """Raise `topic`'s partition count to `total` and wait until the new partitions have leaders."""
        admin = self.admin()
        try:
            admin.create_partitions({topic: total})
            admin.wait_for_topics([topic], timeout_ms=int(timeout_s * 1000))
        finally:
            admin.close()

    def delete_topic(self, topic: str) -> None:
        admin = self.admin()
        try:
            admin.delete_topics([topic])
        finally:
            admin.close()

    def restart(self, *, down_s: float = 0.0, sleep: Any = None) -> None:
        """Stop the broker (SIGTERM: a clean shutdown) and start it again on the same ports and data."""
        import time

        if self._process is not None:
            self._terminate(self._process)
        (sleep or time.sleep)(down_s)
        self._launch()

    @staticmethod
    def _terminate(process: subprocess.Popen[bytes]) -> None:
        """SIGTERM the broker's process group; SIGKILL it if it has not gone within 30 s."""
        for sig, wait_s in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            try:
                process.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def stop(self) -> None:
        """Stop the broker and remove its data folder; safe to call twice."""
        atexit.unregister(self.stop)
        if self._process is not None:
            self._terminate(self._process)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> LocalKafka:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
