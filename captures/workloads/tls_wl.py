"""kafka-python or aiokafka over TLS, writing a key log: produce then consume, or (``long-lived``,
kafka-python) connect and warm up first, say READY, and only produce and consume once told ``go``
(the capture starts in between, well after every handshake).

The client's context comes from ``ssl.create_default_context()`` with ``keylog_filename`` set, so
OpenSSL writes the NSS key log kdissect and tshark decrypt with. TLS 1.3 suites are whatever the
terminator offers (forced there through ``OPENSSL_CONF``); ``--max-tls 1.2`` caps the client.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import sys
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from workloads.common import (
    AIOKAFKA_SENT,
    KAFKA_PYTHON_SENT,
    bootstrap,
    consumed_record,
    new_result,
    produced_record,
    requests_in_log,
    workload_parser,
    write_json,
)
from workloads.common import PlannedMessage as Message


def _context(keylog: str, max_tls: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the terminator's certificate is self-signed
    context.keylog_filename = keylog
    if max_tls == "1.2":
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    return context


def _messages(prefix: str, n: int) -> list[Message]:
    return [Message(f"{prefix}-{i}".encode(), f"value {prefix} #{i} ".encode() * 8, "none", ()) for i in range(n)]


def _produce(producer: KafkaProducer, topic: str, plan: list[Message], gap_s: float = 0.0) -> list[dict]:
    out = []
    for m in plan:
        meta = producer.send(topic, key=m.key, value=m.value, partition=0).get(timeout=20)
        out.append(produced_record(m, topic, meta.partition, meta.offset, acks=-1))
        if gap_s:
            time.sleep(gap_s)
    return out


def _consume(consumer: KafkaConsumer, want: int, result: dict) -> None:
    deadline = time.monotonic() + 30
    got = 0
    while got < want and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=300).values():
            for r in records:
                got += 1
                result["consumed"].append(consumed_record(r.topic, r.partition, r.offset, r.key, r.value, r.headers))


async def _aiokafka(args, context: ssl.SSLContext, result: dict) -> None:
    common = {"bootstrap_servers": bootstrap(args.port), "security_protocol": "SSL", "ssl_context": context}
    producer = AIOKafkaProducer(client_id="aiokafka-tls-producer", acks="all", **common)
    await producer.start()
    for m in _messages("tls", args.messages):
        meta = await producer.send_and_wait(args.topic, key=m.key, value=m.value, partition=0)
        result["produced"].append(produced_record(m, args.topic, meta.partition, meta.offset, acks=-1))
    await producer.stop()
    consumer = AIOKafkaConsumer(client_id="aiokafka-tls-consumer", auto_offset_reset="earliest", **common)
    await consumer.start()
    consumer.assign([TopicPartition(args.topic, 0)])
    consumer.seek(TopicPartition(args.topic, 0), 0)
    while len(result["consumed"]) < args.messages:
        for records in (await consumer.getmany(timeout_ms=300)).values():
            for r in records:
                result["consumed"].append(consumed_record(r.topic, r.partition, r.offset, r.key, r.value, r.headers))
    await consumer.stop()


def main() -> int:
    parser = workload_parser(__doc__.splitlines()[0], ("produce-consume", "long-lived"))
    parser.add_argument("--keylog", required=True)
    parser.add_argument("--max-tls", choices=("1.2", "1.3"))
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--client", choices=("kafka-python", "aiokafka"), default="kafka-python")
    args = parser.parse_args()
    logging.basicConfig(filename=args.log, level=logging.DEBUG)
    context = _context(args.keylog, args.max_tls)
    result = new_result({"name": args.client, "tls": args.max_tls or "1.3"}, args.topic)
    if args.client == "aiokafka":
        asyncio.run(asyncio.wait_for(_aiokafka(args, context, result), 60))
        result["requests_sent"] = requests_in_log(args.log.read_text(), AIOKAFKA_SENT)
        write_json(args.out, result)
        return 0
    common = {"bootstrap_servers": bootstrap(args.port), "security_protocol": "SSL", "ssl_context": context}
    producer = KafkaProducer(client_id="kafka-python-tls-producer", acks="all", **common)
    consumer = KafkaConsumer(client_id="kafka-python-tls-consumer", auto_offset_reset="earliest", **common)
    consumer.assign([TopicPartition(args.topic, 0)])
    if args.command == "long-lived":
        warm = _produce(producer, args.topic, _messages("warm-up", 2))
        _consume(consumer, len(warm), result)
        result["consumed"].clear()
        print("READY", flush=True)
        assert sys.stdin.readline().strip() == "go"
        result["produced"] = _produce(producer, args.topic, _messages("live", args.messages), gap_s=0.02)
        _consume(consumer, args.messages + len(warm), result)
        print("DONE", flush=True)
        assert sys.stdin.readline().strip() == "stop"
    else:
        result["produced"] = _produce(producer, args.topic, _messages("tls", args.messages))
        _consume(consumer, args.messages, result)
    producer.close(10)
    consumer.close()
    result["requests_sent"] = requests_in_log(args.log.read_text(), KAFKA_PYTHON_SENT)
    write_json(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
