"""Monitor/Execute (Kafka): one description of how to reach a user's secured Kafka (TLS, SASL), written out for each
client the project runs against the broker: Spark's Kafka source and sink (the Java client's `kafka.*` options),
the offset reader and committer (kafka-python) and the generator (librdkafka).

The password is never a command-line argument (a process list shows those): `--kafka-sasl-password-env NAME` names
the environment variable that holds it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

Protocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
PROTOCOLS: tuple[Protocol, ...] = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_JAAS_MODULE = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


class KafkaSecurityError(ValueError):
    """Kafka connection settings that cannot work, naming the setting."""


@dataclass(frozen=True)
class KafkaSecurity:
    """`protocol` as Kafka names it; `ca_file`: PEM certificates that sign the brokers' (empty: the system's);
    `check_hostname`: the broker's certificate must name the host connected to; SASL: mechanism, user, password."""

    protocol: Protocol = "PLAINTEXT"
    ca_file: str = ""
    check_hostname: bool = True
    sasl_mechanism: str = ""
    sasl_username: str = ""
    sasl_password: str = ""

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise KafkaSecurityError(f"Kafka security protocol {self.protocol!r}: expected one of {PROTOCOLS}")
        if self.ca_file and not self.tls:
            raise KafkaSecurityError(f"Kafka CA file {self.ca_file!r} given but protocol {self.protocol} has no TLS")
        if self.ca_file and not Path(self.ca_file).is_file():
            raise KafkaSecurityError(f"Kafka CA file {self.ca_file!r}: no such file")
        if self.sasl:
            if self.sasl_mechanism not in MECHANISMS:
                raise KafkaSecurityError(
                    f"Kafka SASL mechanism {self.sasl_mechanism!r} (protocol {self.protocol}): expected one of "
                    f"{MECHANISMS}"
                )
            if not self.sasl_username or not self.sasl_password:
                raise KafkaSecurityError(f"Kafka protocol {self.protocol} needs a SASL username and password")
        elif self.sasl_mechanism or self.sasl_username or self.sasl_password:
            raise KafkaSecurityError(f"Kafka SASL settings given but protocol {self.protocol} has no SASL")

    def __repr__(self) -> str:  # the password stays out of logs and tracebacks
        shown = "***" if self.sasl_password else ""
        return (
            f"KafkaSecurity(protocol={self.protocol!r}, ca_file={self.ca_file!r}, check_hostname="
            f"{self.check_hostname}, sasl_mechanism={self.sasl_mechanism!r}, sasl_username={self.sasl_username!r}, "
            f"sasl_password={shown!r})"
        )

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def java(self) -> dict[str, str]:
        """Kafka's Java client properties (Spark's source and sink take them with a `kafka.` prefix)."""
        out: dict[str, str] = {"security.protocol": self.protocol}
        if self.tls:
            out["ssl.endpoint.identification.algorithm"] = "https" if self.check_hostname else ""
            if self.ca_file:
                out |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca_file}
        if self.sasl:
            login = _JAAS_MODULE[self.sasl_mechanism]
            user, password = _jaas_quote(self.sasl_username), _jaas_quote(self.sasl_password)
            out |= {
                "sasl.mechanism": self.sasl_mechanism,
                "sasl.jaas.config": f'{login} required username="{user}" password="{password}";',
            }
        return out

    def spark_options(self) -> dict[str, str]:
        """The Java properties as Spark's Kafka source and sink options."""
        return {f"kafka.{key}": value for key, value in self.java().items()}

    def kafka_python(self) -> dict[str, Any]:
        """kafka-python's settings (the offset reader, the committer, the exporter)."""
        out: dict[str, Any] = {"security_protocol": self.protocol}
        if self.tls:
            out["ssl_check_hostname"] = self.check_hostname
            if self.ca_file:
                out["ssl_cafile"] = self.ca_file
        if self.sasl:
            out |= {
                "sasl_mechanism": self.sasl_mechanism,
                "sasl_plain_username": self.sasl_username,
                "sasl_plain_password": self.sasl_password,
            }
        return out

    def librdkafka(self) -> dict[str, str]:
        """librdkafka's settings (confluent-kafka: the generator)."""
        out = {"security.protocol": self.protocol.lower()}
        if self.tls:
            out["ssl.endpoint.identification.algorithm"] = "https" if self.check_hostname else "none"
            if self.ca_file:
                out["ssl.ca.location"] = self.ca_file
        if self.sasl:
            out |= {
                "sasl.mechanism": self.sasl_mechanism,
                "sasl.username": self.sasl_username,
                "sasl.password": self.sasl_password,
            }
        return out


def _jaas_quote(value: str) -> str:
    """A value inside a JAAS option's double quotes."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The connection settings on a command line (the pipelines, the generator, the exporter)."""
    group = parser.add_argument_group("Kafka security (TLS, SASL)")
    group.add_argument("--kafka-security-protocol", choices=PROTOCOLS, default="PLAINTEXT")
    group.add_argument("--kafka-ca-file", default="", help="PEM CA certificate(s) of the brokers (TLS)")
    group.add_argument(
        "--kafka-no-hostname-check",
        action="store_true",
        help="accept a broker certificate that does not name the host (TLS)",
    )
    group.add_argument("--kafka-sasl-mechanism", choices=MECHANISMS, default=None)
    group.add_argument("--kafka-sasl-username", default="")
    group.add_argument(
        "--kafka-sasl-password-env", default="", metavar="NAME", help="environment variable holding the SASL password"
    )


def from_arguments(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> KafkaSecurity:
    """The settings `add_arguments` read; a SASL password variable that is unset is an error naming it."""
    environ = os.environ if environ is None else environ
    password = ""
    if args.kafka_sasl_password_env:
        password = environ.get(args.kafka_sasl_password_env, "")
        if not password:
            raise KafkaSecurityError(
                f"--kafka-sasl-password-env {args.kafka_sasl_password_env}: the variable is unset or empty"
            )
    return KafkaSecurity(
        protocol=cast(Protocol, args.kafka_security_protocol),
        ca_file=args.kafka_ca_file,
        check_hostname=not args.kafka_no_hostname_check,
        sasl_mechanism=args.kafka_sasl_mechanism or "",
        sasl_username=args.kafka_sasl_username,
        sasl_password=password,
    )
