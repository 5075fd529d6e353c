"""Unit: one description of a secured Kafka connection, written out for Spark (Java client), kafka-python and
librdkafka; settings that cannot work are refused naming the setting; the password never shows."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from daedalus_spark.kafkacluster import security
from daedalus_spark.kafkacluster.security import KafkaSecurity, KafkaSecurityError
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.pipeline import kafka_options, parser


@pytest.fixture
def ca(tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    path.write_text("-----BEGIN CERTIFICATE-----\n")
    return str(path)


def test_sasl_over_tls_for_each_client(ca: str) -> None:
    s = KafkaSecurity("SASL_SSL", ca, sasl_mechanism="SCRAM-SHA-512", sasl_username="u", sasl_password='p"w')
    assert s.java() == {
        "security.protocol": "SASL_SSL",
        "ssl.endpoint.identification.algorithm": "https",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": ca,
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" '
        'password="p\\"w";',
    }
    assert s.spark_options()["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert s.kafka_python() == {
        "security_protocol": "SASL_SSL",
        "ssl_check_hostname": True,
        "ssl_cafile": ca,
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "u",
        "sasl_plain_password": 'p"w',
    }
    assert s.librdkafka() == {
        "security.protocol": "sasl_ssl",
        "ssl.endpoint.identification.algorithm": "https",
        "ssl.ca.location": ca,
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "u",
        "sasl.password": 'p"w',
    }
    assert 'p"w' not in repr(s)


def test_tls_without_hostname_check_and_plaintext() -> None:
    tls = KafkaSecurity("SSL", check_hostname=False)
    assert tls.java() == {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""}
    assert tls.kafka_python() == {"security_protocol": "SSL", "ssl_check_hostname": False}
    assert tls.librdkafka()["ssl.endpoint.identification.algorithm"] == "none"
    assert KafkaSecurity().kafka_python() == {"security_protocol": "PLAINTEXT"}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"protocol": "TLS"}, "security protocol 'TLS'"),
        ({"protocol": "PLAINTEXT", "ca_file": "CA"}, "has no TLS"),
        ({"protocol": "SSL", "ca_file": "/nonexistent/ca.pem"}, "no such file"),
        ({"protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI", "sasl_username": "u", "sasl_password": "p"}, "GSSAPI"),
        ({"protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_username": "u"}, "username and password"),
        ({"protocol": "SSL", "sasl_username": "u"}, "has no SASL"),
    ],
    ids=["unknown-protocol", "ca-without-tls", "ca-missing", "mechanism", "no-password", "sasl-without-sasl"],
)
def test_settings_that_cannot_work_are_refused(settings: dict[str, str], message: str, ca: str) -> None:
    settings = {k: (ca if v == "CA" else v) for k, v in settings.items()}
    with pytest.raises(KafkaSecurityError, match=message):
        KafkaSecurity(**settings)  # type: ignore[arg-type]


def test_the_pipelines_command_line_hands_the_settings_to_spark_and_reads_the_password_from_the_environment(
    ca: str,
) -> None:
    args = parser(wordcount.PIPELINE).parse_args(
        [
            "--source=kafka",
            "--kafka-security-protocol=SASL_SSL",
            f"--kafka-ca-file={ca}",
            "--kafka-sasl-mechanism=PLAIN",
            "--kafka-sasl-username=spark",
            "--kafka-sasl-password-env=KAFKA_PW",
            "--kafka-option=ssl.endpoint.identification.algorithm=",
        ]
    )
    secured = security.from_arguments(args, {"KAFKA_PW": "from-env"})
    options = kafka_options(args.kafka_option, secured)
    assert options["kafka.security.protocol"] == "SASL_SSL"
    assert options["kafka.ssl.truststore.location"] == ca
    assert 'password="from-env"' in options["kafka.sasl.jaas.config"]
    assert options["kafka.ssl.endpoint.identification.algorithm"] == ""  # --kafka-option has the last word
    with pytest.raises(KafkaSecurityError, match="KAFKA_PW: the variable is unset"):
        security.from_arguments(args, {})


def test_every_command_line_that_connects_to_kafka_takes_the_settings(capsys: pytest.CaptureFixture[str]) -> None:
    from daedalus_spark.kafkacluster import exporter
    from daedalus_spark.workloads import generator

    p = argparse.ArgumentParser()
    security.add_arguments(p)
    assert security.from_arguments(p.parse_args([]), {}) == KafkaSecurity()
    for main in (exporter.main, generator.main):
        with pytest.raises(SystemExit) as usage:
            main(["--help"] if main is exporter.main else ["wordcount", "--help"])
        assert usage.value.code == 0
        assert "--kafka-sasl-password-env" in capsys.readouterr().out


def test_a_kraft_cluster_id_never_starts_with_a_dash() -> None:
    """The storage tool reads `-t -x...` as an option; 1 id in 64 would start so without the check (2,000 draws
    miss that with a chance of 1e-14)."""
    from daedalus_spark.kafkacluster.broker import cluster_id

    ids = [cluster_id() for _ in range(2000)]
    assert not [made for made in ids if made.startswith("-")]
    assert all(len(made) == 22 for made in ids)
