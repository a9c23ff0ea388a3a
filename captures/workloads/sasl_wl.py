"""SASL/SCRAM logins: kafka-python and aiokafka each log in with SCRAM-SHA-256 and SCRAM-SHA-512.

The broker runs with `--authentication` and, in its in-memory mode, has no users: every login ends
in the server-final message `e=unknown-user`, which is real wire traffic of both mechanisms and a
real failure. Each login is one client start; what the client raised is the truth kept. The
password is a made-up one the tests grep every output for (it must never appear).
"""

from __future__ import annotations

import asyncio
import logging

import aiokafka
import kafka
from aiokafka import AIOKafkaProducer
from kafka import KafkaAdminClient

from workloads.common import (
    AIOKAFKA_SENT,
    KAFKA_PYTHON_SENT,
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


def scram_logins(args, result: dict) -> None:
    result["sasl_logins"] = [kafka_python_login(args.port, m) for m in MECHANISMS]
    result["sasl_logins"] += [asyncio.run(aiokafka_login(args.port, m)) for m in MECHANISMS]
    result["sasl_password"] = PASSWORD


COMMANDS = {"scram-logins": scram_logins}


def main() -> None:
    args = workload_parser(__doc__, COMMANDS).parse_args()
    logging.basicConfig(level=logging.DEBUG, filename=args.log, filemode="w")
    # aiokafka asks ApiVersions v0, which carries no software fields: only kafka-python's are on the wire
    result = new_result({"library": "kafka-python", "version": kafka.__version__,
                         "also": f"aiokafka {aiokafka.__version__}"}, args.topic)
    COMMANDS[args.command](args, result)
    logging.shutdown()
    log = args.log.read_text(errors="replace")
    sent = [(m.group(1).replace("SaslHandShake", "SaslHandshake"), int(m.group(2)))  # aiokafka's spelling
            for pattern in (KAFKA_PYTHON_SENT, AIOKAFKA_SENT) for m in pattern.finditer(log)]
    result["requests_sent"] = count_requests(sent)
    write_json(args.out, result)


if __name__ == "__main__":
    main()
