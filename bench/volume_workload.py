"""Bulk traffic from a real client (confluent-kafka, kafka-python or aiokafka) for benchmark captures:
produce many event-like records, or consume them back in a consumer group.

The capture corpus workloads (captures/workloads/) are sized for a small, exactly known corpus; a
benchmark needs tens of megabytes of the same kind of traffic, so this one produces by volume. It is
run as its own process by bench/make_large_capture.py with captures/ on PYTHONPATH.

    python bench/volume_workload.py produce  --client confluent --port 49092 --topic T --megabytes 5 --out F
    python bench/volume_workload.py consume  --client kafka-python --port 49092 --topic T --expect N --out F
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path

from workloads.common import CODECS, HEARTBEAT_INTERVAL_MS, SESSION_TIMEOUT_MS, bootstrap

CONSUME_TIMEOUT = 120.0  # seconds a consumer may take to read everything back
WORDS = ("order", "shipped", "paid", "refunded", "cart", "checkout", "warehouse", "courier", "invoice", "customer",
         "priority")


def events(client: str, codec: str, megabytes: float, seed: int) -> Iterator[tuple[bytes, bytes, list]]:
    """JSON order events of 100 B to 2 KB (they compress about as well as real ones): key, value, headers."""
    rng = random.Random(seed)
    budget = int(megabytes * 1e6)
    seq = 0
    while budget > 0:
        event = {"seq": seq, "client": client, "codec": codec, "ts": 1_700_000_000_000 + seq,
                 "customer": rng.randrange(100_000), "status": rng.choice(WORDS),
                 "items": [{"sku": f"{rng.getrandbits(40):010x}", "qty": rng.randrange(1, 9),
                            "note": " ".join(rng.choices(WORDS, k=rng.randrange(1, 8)))}
                           for _ in range(rng.randrange(1, 12))]}
        value = json.dumps(event).encode()
        key = f"customer-{event['customer']}".encode()
        headers = [("trace-id", rng.getrandbits(64).to_bytes(8, "big")), ("client", client.encode())]
        budget -= len(value)
        seq += 1
        yield key, value, headers


def produce_confluent(port: int, topic: str, codecs: list[str], megabytes: float) -> int:
    import confluent_kafka as ck

    sent = 0
    for i, codec in enumerate(codecs):
        producer = ck.Producer({"bootstrap.servers": bootstrap(port), "client.id": f"bench-confluent-{codec}",
                                "compression.type": codec, "linger.ms": 5, "acks": "all"})
        for key, value, headers in events("confluent", codec, megabytes / len(codecs), seed=i):
            while True:
                try:
                    producer.produce(topic, key=key, value=value, headers=headers)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
            sent += 1
        if producer.flush(60):
            raise SystemExit(f"confluent producer ({codec}) could not deliver everything")
    return sent


def produce_kafka_python(port: int, topic: str, codecs: list[str], megabytes: float) -> int:
    from kafka import KafkaProducer

    sent = 0
    for i, codec in enumerate(codecs):
        producer = KafkaProducer(bootstrap_servers=bootstrap(port), client_id=f"bench-kafka-python-{codec}",
                                 compression_type=None if codec == "none" else codec, acks="all", linger_ms=5)
        futures = [producer.send(topic, key=k, value=v, headers=h)
                   for k, v, h in events("kafka-python", codec, megabytes / len(codecs), seed=100 + i)]
        producer.flush(60)
        for future in futures:
            future.get(timeout=10)
        sent += len(futures)
        producer.close(10)
    return sent


def consume_confluent(port: int, topic: str, group: str, expect: int) -> int:
    import confluent_kafka as ck

    consumer = ck.Consumer({"bootstrap.servers": bootstrap(port), "client.id": f"{group}-member",
                            "group.id": group, "session.timeout.ms": SESSION_TIMEOUT_MS,
                            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS, "auto.offset.reset": "earliest",
                            "enable.auto.commit": True, "auto.commit.interval.ms": 500})
    consumer.subscribe([topic])
    got, deadline = 0, time.monotonic() + CONSUME_TIMEOUT
    while got < expect and time.monotonic() < deadline:
        got += sum(1 for m in consumer.consume(1000, 0.5) if not m.error())
    consumer.close()
    return got


def consume_kafka_python(port: int, topic: str, group: str, expect: int) -> int:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap(port), client_id=f"{group}-member",
                             group_id=group, session_timeout_ms=SESSION_TIMEOUT_MS,
                             heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS, auto_offset_reset="earliest",
                             enable_auto_commit=True, auto_commit_interval_ms=500)
    got, deadline = 0, time.monotonic() + CONSUME_TIMEOUT
    while got < expect and time.monotonic() < deadline:
        got += sum(len(batch) for batch in consumer.poll(timeout_ms=500).values())
    consumer.commit()
    consumer.close()
    return got


async def _produce_aiokafka(port: int, topic: str, codecs: list[str], megabytes: float) -> int:
    from aiokafka import AIOKafkaProducer

    sent = 0
    for i, codec in enumerate(codecs):
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap(port), client_id=f"bench-aiokafka-{codec}",
                                    compression_type=None if codec == "none" else codec, acks="all", linger_ms=5)
        await producer.start()
        try:
            futures = [await producer.send(topic, key=k, value=v, headers=h)
                       for k, v, h in events("aiokafka", codec, megabytes / len(codecs), seed=200 + i)]
            await asyncio.gather(*futures)
            sent += len(futures)
        finally:
            await producer.stop()
    return sent


async def _consume_aiokafka(port: int, topic: str, group: str, expect: int) -> int:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap(port), client_id=f"{group}-member",
                                group_id=group, session_timeout_ms=SESSION_TIMEOUT_MS,
                                heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS, auto_offset_reset="earliest",
                                enable_auto_commit=True, auto_commit_interval_ms=500)
    await consumer.start()
    got, deadline = 0, time.monotonic() + CONSUME_TIMEOUT
    try:
        while got < expect and time.monotonic() < deadline:
            got += sum(len(batch) for batch in (await consumer.getmany(timeout_ms=500)).values())
        await consumer.commit()
    finally:
        await consumer.stop()
    return got


def produce_aiokafka(port: int, topic: str, codecs: list[str], megabytes: float) -> int:
    return asyncio.run(_produce_aiokafka(port, topic, codecs, megabytes))


def consume_aiokafka(port: int, topic: str, group: str, expect: int) -> int:
    return asyncio.run(_consume_aiokafka(port, topic, group, expect))


PRODUCERS = {"confluent": produce_confluent, "kafka-python": produce_kafka_python, "aiokafka": produce_aiokafka}
CONSUMERS = {"confluent": consume_confluent, "kafka-python": consume_kafka_python, "aiokafka": consume_aiokafka}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("produce", "consume"))
    ap.add_argument("--client", choices=sorted(PRODUCERS), required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--out", type=Path, required=True, help="JSON file: how many records were sent or read")
    ap.add_argument("--codecs", default=",".join(CODECS))
    ap.add_argument("--megabytes", type=float, default=5.0, help="produce: value bytes to send, all codecs")
    ap.add_argument("--group", help="consume: consumer group id")
    ap.add_argument("--expect", type=int, default=0, help="consume: records to read before leaving")
    args = ap.parse_args()
    if args.command == "produce":
        count = PRODUCERS[args.client](args.port, args.topic, args.codecs.split(","), args.megabytes)
    else:
        count = CONSUMERS[args.client](args.port, args.topic, args.group, args.expect)
        if count < args.expect:
            raise SystemExit(f"{args.client} read {count} of {args.expect} records in {CONSUME_TIMEOUT:.0f}s")
    args.out.write_text(json.dumps({"command": args.command, "client": args.client, "topic": args.topic,
                                    "records": count}) + "\n")


if __name__ == "__main__":
    main()
