"""Chatty traffic from real clients, as a busy production broker carries it: many small requests.

confluent-kafka producers with ``linger.ms=0`` and ``batch.num.messages=1`` (so every Produce request
carries one small record), a consumer group polling the topic, and an admin client asking for
metadata and group descriptions, all at once until stdin says ``stop`` (or ``--seconds`` pass).
Run as its own process by bench/make_chatty_capture.py with captures/ on PYTHONPATH.

    python bench/chatty_workload.py --port 19400 --topic chatty --out F.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import threading
import time
from pathlib import Path

import confluent_kafka as ck
from confluent_kafka import admin as ckadmin
from workloads.common import HEARTBEAT_INTERVAL_MS, SESSION_TIMEOUT_MS, bootstrap

ADMIN_PERIOD = 0.5  # seconds between two admin calls (list_topics / describe_consumer_groups)
IN_FLIGHT = 2000  # messages a producer may have unacknowledged before it waits for deliveries


def small_record(rng: random.Random, seq: int, producer: int) -> tuple[bytes, bytes]:
    """A small event (~60-120 B): the typical size of a metrics or click event."""
    key = f"user-{rng.randrange(10_000)}".encode()
    value = json.dumps({"seq": seq, "p": producer, "ev": rng.choice(("click", "view", "buy")),
                        "v": rng.random()}).encode()
    return key, value


def producer_loop(port: int, topic: str, index: int, rate: float, stop: threading.Event, counts: dict) -> None:
    """Produce small records at about ``rate`` per second (a steady load a capture keeps up with)."""
    producer = ck.Producer({"bootstrap.servers": bootstrap(port), "client.id": f"chatty-producer-{index}",
                            "linger.ms": 0, "batch.num.messages": 1, "acks": "all",
                            "max.in.flight.requests.per.connection": 5})
    rng, seq, delivered = random.Random(index), 0, [0]
    started = time.monotonic()

    def on_delivery(err, msg) -> None:
        if err is None:
            delivered[0] += 1

    while not stop.is_set():
        if seq - delivered[0] > IN_FLIGHT or seq > (time.monotonic() - started) * rate:
            producer.poll(0.005)
            continue
        key, value = small_record(rng, seq, index)
        try:
            producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
            seq += 1
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.flush(30)
    counts[f"producer-{index}"] = delivered[0]


def consumer_loop(port: int, topic: str, group: str, index: int, stop: threading.Event, counts: dict) -> None:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap(port), "client.id": f"chatty-consumer-{index}",
                            "group.id": group, "session.timeout.ms": SESSION_TIMEOUT_MS,
                            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS, "auto.offset.reset": "latest",
                            "enable.auto.commit": True, "auto.commit.interval.ms": 1000,
                            "fetch.wait.max.ms": 100})
    consumer.subscribe([topic])
    got = 0
    while not stop.is_set():
        got += sum(1 for m in consumer.consume(500, 0.2) if not m.error())
    consumer.close()
    counts[f"consumer-{index}"] = got


def admin_loop(port: int, group: str, stop: threading.Event, counts: dict) -> None:
    admin = ckadmin.AdminClient({"bootstrap.servers": bootstrap(port), "client.id": "chatty-admin"})
    calls = 0
    while not stop.wait(ADMIN_PERIOD):
        admin.list_topics(timeout=5)
        for future in admin.describe_consumer_groups([group], request_timeout=5).values():
            with contextlib.suppress(ck.KafkaException):  # a group still forming is answered with an error
                future.result(timeout=5)
        calls += 2
    counts["admin-calls"] = calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--out", type=Path, required=True, help="JSON file: what each client sent or read")
    ap.add_argument("--producers", type=int, default=3)
    ap.add_argument("--rate", type=float, default=1500.0, help="records per second per producer")
    ap.add_argument("--consumers", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=600.0, help="stop after this long if stdin says nothing")
    args = ap.parse_args()
    stop, counts = threading.Event(), {}
    group = f"{args.topic}-group"
    threads = [threading.Thread(target=producer_loop, args=(args.port, args.topic, i, args.rate, stop, counts))
               for i in range(args.producers)]
    threads += [threading.Thread(target=consumer_loop, args=(args.port, args.topic, group, i, stop, counts))
                for i in range(args.consumers)]
    threads.append(threading.Thread(target=admin_loop, args=(args.port, group, stop, counts)))
    for thread in threads:
        thread.start()
    print("flowing", flush=True)
    waiter = threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True)
    waiter.start()
    stop.wait(args.seconds)
    stop.set()
    for thread in threads:
        thread.join(60)
    args.out.write_text(json.dumps(counts) + "\n")


if __name__ == "__main__":
    main()
