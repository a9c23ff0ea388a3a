"""SASL/SCRAM logins: kafka-python, aiokafka and confluent-kafka (librdkafka) each log in with
SCRAM-SHA-256 and SCRAM-SHA-512.

The broker runs with `--authentication` and, in its in-memory mode, has no users: every login ends
in the server-final message `e=unknown-user`, which is real wire traffic of both mechanisms and a
real failure. Each login is one client start; what the client raised is the truth kept. The
password is a made-up one the tests grep every output for (it must never appear).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import aiokafka
import confluent_kafka
import kafka
from aiokafka import AIOKafkaProducer
from confluent_kafka import KafkaException, Producer
from kafka import KafkaAdminClient

from workloads.common import (
    AIOKAFKA_SENT,
    KAFKA_PYTHON_SENT,
    LIBRDKAFKA_SENT,
    bootstrap,
    count_requests,
    new_result,
    workload_parser,
    write_json,
)

USER = "kd-capture-user"
PASSWORD = "kd-capture-password-7f3a"  # not a real secret: what the tests look for in every output
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def kafka_python_login(port: int, mechanism: str) -> dict:
    """One KafkaAdminClient start; it gives up after its bootstrap timeout (one or a few connections)."""
    try:
        KafkaAdminClient(bootstrap_servers=bootstrap(port), security_protocol="SASL_PLAINTEXT",
                         sasl_mechanism=mechanism, sasl_plain_username=USER, sasl_plain_password=PASSWORD,
                         request_timeout_ms=3000, bootstrap_timeout_ms=2500, reconnect_backoff_ms=1000,
                         reconnect_backoff_max_ms=1000,
                         client_id=f"kafka-python-{mechanism.lower()}").close()
        return {"client": "kafka-python", "mechanism": mechanism, "user": USER, "error": None}
    except Exception as exc:  # the failure is the point: kept as the client saw it
        return {"client": "kafka-python", "mechanism": mechanism, "user": USER, "error": repr(exc)}


async def aiokafka_login(port: int, mechanism: str) -> dict:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap(port), security_protocol="SASL_PLAINTEXT",
                                sasl_mechanism=mechanism, sasl_plain_username=USER, sasl_plain_password=PASSWORD,
                                request_timeout_ms=3000, client_id=f"aiokafka-{mechanism.lower()}")
    try:
        await producer.start()
        error = None
    except Exception as exc:  # the failure is the point: kept as the client saw it
        error = repr(exc)
    finally:
        await producer.stop()
    return {"client": "aiokafka", "mechanism": mechanism, "user": USER, "error": error}


def confluent_login(port: int, mechanism: str) -> dict:
    """One metadata request with a 2.5 s timeout; librdkafka reconnects (and logs in) every second meanwhile."""
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap(port), "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanisms": mechanism, "sasl.username": USER, "sasl.password": PASSWORD,
                         "reconnect.backoff.ms": 1000, "reconnect.backoff.max.ms": 1000, "debug": "protocol",
                         "client.id": f"confluent-{mechanism.lower()}", "error_cb": lambda e: errors.append(str(e))})
    try:
        producer.list_topics(timeout=2.5)
    except KafkaException as exc:
        errors.append(str(exc))
    producer.flush(0)
    auth = [e for e in errors if "SASL" in e]
    return {"client": "confluent-kafka", "mechanism": mechanism, "user": USER,
            "error": auth[0] if auth else (errors[0] if errors else None)}


def scram_logins(args, result: dict) -> None:
    result["sasl_logins"] = [kafka_python_login(args.port, m) for m in MECHANISMS]
    result["sasl_logins"] += [asyncio.run(aiokafka_login(args.port, m)) for m in MECHANISMS]
    result["sasl_logins"] += [confluent_login(args.port, m) for m in MECHANISMS]
    result["sasl_password"] = PASSWORD


COMMANDS = {"scram-logins": scram_logins}


def main() -> None:
    args = workload_parser(__doc__, COMMANDS).parse_args()
    logging.basicConfig(level=logging.DEBUG, filename=args.log, filemode="w")
    rdkafka_log = Path(f"{args.log}.rdkafka")  # librdkafka's default logger writes to fd 2
    os.dup2(os.open(rdkafka_log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    # aiokafka asks ApiVersions v0, which carries no software fields: only kafka-python's and librdkafka's
    rd_version, rd_lib = confluent_kafka.__version__, confluent_kafka.libversion()[0]
    result = new_result({"library": "kafka-python", "version": kafka.__version__,
                         "also": f"aiokafka {aiokafka.__version__}, confluent-kafka {rd_version} (librdkafka {rd_lib})",
                         "software_versions": [kafka.__version__, f"{rd_version}-rdkafka-{rd_lib}"]}, args.topic)
    COMMANDS[args.command](args, result)
    logging.shutdown()
    log, rdkafka = args.log.read_text(errors="replace"), rdkafka_log.read_text(errors="replace")
    sent = [(m.group(1).replace("SaslHandShake", "SaslHandshake"), int(m.group(2)))  # aiokafka's spelling
            for pattern, text in ((KAFKA_PYTHON_SENT, log), (AIOKAFKA_SENT, log), (LIBRDKAFKA_SENT, rdkafka))
            for m in pattern.finditer(text)]
    result["requests_sent"] = count_requests(sent)
    write_json(args.out, result)


if __name__ == "__main__":
    main()
