"""confluent-kafka (librdkafka) workloads: produce/consume, admin, transactions, a bulk stream, a seed.

librdkafka's `debug=protocol` log goes to file descriptor 2, which `main` points at `--log` before any
client exists, so every request the library wrote (including during close) is in that file.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import threading
import time
from pathlib import Path

import confluent_kafka as ck
from confluent_kafka import admin as ckadmin

from workloads.common import (
    HEARTBEAT_INTERVAL_MS,
    LIBRDKAFKA_SENT,
    SESSION_TIMEOUT_MS,
    PlannedMessage,
    bootstrap,
    commit_record,
    consumed_record,
    describe_bytes,
    message_plan,
    new_result,
    produced_record,
    record_admin_call,
    requests_in_log,
    workload_parser,
    write_json,
)

CLIENT = "confluent-kafka"
ACKS_ALL = -1
BULK_VALUE_SIZE = 100_000


def client_info() -> dict:
    return {"library": CLIENT, "version": ck.__version__, "librdkafka": ck.libversion()[0]}


def base_config(port: int, client_id: str) -> dict:
    return {"bootstrap.servers": bootstrap(port), "client.id": client_id, "debug": "protocol"}


def produce(producer: ck.Producer, topic: str, plan: list[PlannedMessage], acks: int, **extra) -> list[dict]:
    """Produce `plan` and wait for every delivery report; returns ground truth in plan order."""
    reports: dict[int, dict] = {}

    def reporter(index: int, message: PlannedMessage):
        def on_delivery(err, msg) -> None:
            reports[index] = produced_record(
                message, topic, msg.partition(), msg.offset() if err is None else None,
                acks=acks, error=None if err is None else str(err), **extra,
            )
        return on_delivery

    for index, message in enumerate(plan):
        producer.produce(
            topic, key=message.key, value=message.value, headers=list(message.headers),
            on_delivery=reporter(index, message),
        )
    producer.flush(20)
    return [reports.get(i) or produced_record(m, topic, None, None, acks=acks, error="no delivery report")
            for i, m in enumerate(plan)]


def consume_and_commit(port: int, topic: str, group_id: str, expected: int, result: dict,
                       isolation: str = "read_uncommitted") -> None:
    """Join `group_id`, read `expected` messages, committing each one synchronously."""
    consumer = ck.Consumer(base_config(port, f"{group_id}-consumer") | {
        "group.id": group_id,
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": isolation,
    })
    result["groups"].append({"group_id": group_id, "session_timeout_ms": SESSION_TIMEOUT_MS,
                             "topics": [topic], "isolation_level": isolation})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 40
    got = 0
    while got < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            continue
        got += 1
        result["consumed"].append(consumed_record(
            msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(), msg.headers()))
        consumer.commit(offsets=[ck.TopicPartition(msg.topic(), msg.partition(), msg.offset() + 1)],
                        asynchronous=False)
        result["commits"].append(commit_record(group_id, msg.topic(), msg.partition(), msg.offset() + 1))
    committed = consumer.committed(consumer.assignment(), timeout=10)
    result["committed_read_back"] = [
        {"group_id": group_id, "topic": tp.topic, "partition": tp.partition, "offset": tp.offset}
        for tp in committed
    ]
    consumer.close()


def produce_consume(args, result: dict) -> None:
    """One producer per codec, an explicit metadata request, then a consumer group with commits."""
    plan = message_plan(CLIENT, args.codecs.split(","), pad=args.pad)
    for codec in args.codecs.split(","):
        producer = ck.Producer(base_config(args.port, f"{CLIENT}-producer-{codec}") | {
            "compression.type": codec, "linger.ms": 5, "acks": "all"})
        if codec == "none":
            metadata = producer.list_topics(args.topic, timeout=10)
            result["metadata_requested"] = {"topic": args.topic,
                                            "partitions": sorted(metadata.topics[args.topic].partitions)}
        result["produced"] += produce(producer, args.topic, [m for m in plan if m.codec == codec], ACKS_ALL)
    consume_and_commit(args.port, args.topic, f"{CLIENT}-group", len(plan), result)


def resolved(call):
    """Wrap an admin call so it waits on the futures librdkafka hands back."""
    def run():
        outcome = call()
        if isinstance(outcome, dict):
            return {k: f.result(timeout=15) for k, f in outcome.items()}
        return outcome.result(timeout=15) if hasattr(outcome, "result") else outcome
    return run


def admin_call(result: dict, op: str, call, **args) -> None:
    record_admin_call(result, op, resolved(call), **args)


def admin(args, result: dict) -> None:
    """The admin API surface that tansu answers, plus a few calls it refuses."""
    client = ckadmin.AdminClient(base_config(args.port, f"{CLIENT}-admin"))
    topics = [("inventory", 3), ("audit", 1)]
    timeout = {"request_timeout": 10}
    admin_call(result, "create_topics",
               lambda: client.create_topics([ckadmin.NewTopic(n, p, 1) for n, p in topics], operation_timeout=10),
               topics=[{"name": n, "partitions": p, "replication_factor": 1} for n, p in topics])
    result["topics_created"] = [{"name": n, "partitions": p, "by": "admin create_topics"} for n, p in topics]
    admin_call(result, "create_topics_again",
               lambda: client.create_topics([ckadmin.NewTopic("inventory", 3, 1)], operation_timeout=10),
               topics=[{"name": "inventory", "partitions": 3}], expect="TOPIC_ALREADY_EXISTS")
    admin_call(result, "list_topics", lambda: sorted(client.list_topics(timeout=10).topics))
    admin_call(result, "describe_cluster", lambda: client.describe_cluster(**timeout))
    admin_call(result, "describe_topics",
               lambda: client.describe_topics(ck.TopicCollection(["inventory"]), **timeout), topics=["inventory"])
    admin_call(result, "describe_configs",
               lambda: client.describe_configs([ckadmin.ConfigResource(ckadmin.ResourceType.TOPIC, "inventory")],
                                               **timeout), resource="topic inventory")
    admin_call(result, "describe_configs",
               lambda: client.describe_configs([ckadmin.ConfigResource(ckadmin.ResourceType.BROKER, "111")],
                                               **timeout), resource="broker 111")
    admin_call(result, "incremental_alter_configs",
               lambda: client.incremental_alter_configs([ckadmin.ConfigResource(
                   ckadmin.ResourceType.TOPIC, "inventory", incremental_configs=[ckadmin.ConfigEntry(
                       "retention.ms", "60000", incremental_operation=ckadmin.AlterConfigOpType.SET)])],
                   **timeout), resource="topic inventory", set={"retention.ms": "60000"})
    admin_call(result, "create_partitions",
               lambda: client.create_partitions([ckadmin.NewPartitions("audit", 2)], operation_timeout=10),
               topic="audit", new_total=2)
    admin_call(result, "list_offsets",
               lambda: client.list_offsets({ck.TopicPartition("inventory", 0): ckadmin.OffsetSpec.latest()},
                                           **timeout), partitions=[["inventory", 0, "latest"]])
    admin_call(result, "list_consumer_groups", lambda: client.list_consumer_groups(**timeout))
    admin_call(result, "describe_consumer_groups",
               lambda: client.describe_consumer_groups(["no-such-group"], **timeout), groups=["no-such-group"])
    admin_call(result, "list_consumer_group_offsets",
               lambda: client.list_consumer_group_offsets([ck.ConsumerGroupTopicPartitions("no-such-group")],
                                                          **timeout), group="no-such-group")
    admin_call(result, "delete_topics",
               lambda: client.delete_topics([n for n, _ in topics], operation_timeout=10),
               topics=[n for n, _ in topics])
    result["topics_deleted"] = [n for n, _ in topics]


def transactions(args, result: dict) -> None:
    """Consume-transform-produce: a committed transaction with offsets, then an aborted one."""
    source, sink, txn_id = args.topic, "payments", f"{CLIENT}-txn"
    inputs = [m for m in message_plan("txn-input", ["none"]) if m.key is not None][:3]
    result["produced"] += produce(ck.Producer(base_config(args.port, f"{CLIENT}-plain")), source, inputs, ACKS_ALL)

    txn = ck.Producer(base_config(args.port, f"{CLIENT}-txn-producer") | {"transactional.id": txn_id})
    log = result["transactions"]
    txn.init_transactions(15)
    log.append({"transactional_id": txn_id, "action": "init_transactions"})

    group_id = f"{CLIENT}-txn-group"
    consumer = ck.Consumer(base_config(args.port, f"{group_id}-consumer") | {
        "group.id": group_id, "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS, "auto.offset.reset": "earliest",
        "enable.auto.commit": False})
    result["groups"].append({"group_id": group_id, "session_timeout_ms": SESSION_TIMEOUT_MS, "topics": [source]})
    consumer.subscribe([source])
    received = []
    deadline = time.monotonic() + 40
    while len(received) < len(inputs) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            received.append(msg)
            result["consumed"].append(consumed_record(
                msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(), msg.headers()))

    outputs = [PlannedMessage(m.key(), b"processed:" + m.value(), "none", (("txn", b"commit"),)) for m in received]
    txn.begin_transaction()
    log.append({"transactional_id": txn_id, "action": "begin_transaction"})
    result["produced"] += produce(txn, sink, outputs, ACKS_ALL, transactional_id=txn_id, transaction="committed")
    positions = {}
    for m in received:
        positions[(m.topic(), m.partition())] = max(positions.get((m.topic(), m.partition()), 0), m.offset() + 1)
    offsets = [ck.TopicPartition(t, p, o) for (t, p), o in sorted(positions.items())]
    txn.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 15)
    log.append({"transactional_id": txn_id, "action": "send_offsets_to_transaction", "group_id": group_id,
                "offsets": [{"topic": tp.topic, "partition": tp.partition, "offset": tp.offset} for tp in offsets]})
    result["commits"] += [commit_record(group_id, tp.topic, tp.partition, tp.offset, via="TxnOffsetCommit")
                          for tp in offsets]
    txn.commit_transaction(15)
    log.append({"transactional_id": txn_id, "action": "commit_transaction"})

    doomed = [PlannedMessage(f"doomed-{i}".encode(), b"this transaction is aborted", "none", (("txn", b"abort"),))
              for i in range(2)]
    txn.begin_transaction()
    log.append({"transactional_id": txn_id, "action": "begin_transaction"})
    result["produced"] += produce(txn, sink, doomed, ACKS_ALL, transactional_id=txn_id, transaction="aborted")
    txn.abort_transaction(15)
    log.append({"transactional_id": txn_id, "action": "abort_transaction"})
    consumer.close()

    # read_committed should hide the aborted pair; tansu 0.6.0 delivers them anyway (a broker quirk).
    consume_and_commit(args.port, sink, f"{CLIENT}-read-committed", len(outputs) + len(doomed), result,
                       isolation="read_committed")
    result["notes"].append("the read_committed consumer reads 'payments'; records it got are in 'consumed'")


def bulk_value(seq: int) -> bytes:
    """A deterministic ~100 KB value, so ground truth can give its digest instead of its bytes."""
    phrase = f"bulk-{seq:06d} ".encode()
    return (phrase * (BULK_VALUE_SIZE // len(phrase) + 1))[:BULK_VALUE_SIZE]


def stream(args, result: dict) -> None:
    """Produce big values flat out until told `stop` on stdin; prints READY once the stream flows."""
    producer = ck.Producer(base_config(args.port, f"{CLIENT}-bulk") | {
        "acks": 1, "linger.ms": 5, "batch.size": 1_000_000, "max.in.flight": 5,
        "queue.buffering.max.kbytes": 8192, "compression.type": "none"})
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    delivered: list[dict] = []

    def on_delivery(err, msg) -> None:
        seq = int(msg.key().decode().split("-")[1])
        value = bulk_value(seq)
        delivered.append({
            "seq": seq, "topic": msg.topic(), "key": describe_bytes(msg.key()),
            "partition": msg.partition(), "offset": None if err else msg.offset(),
            "value": {"len": len(value), "sha256": hashlib.sha256(value).hexdigest(),
                      "head_text": value[:26].decode()},
            "headers": [], "codec": "none", "acks": 1, "delivered": err is None,
            "error": None if err is None else str(err), "acked_at": time.time(),
        })

    seq, announced = 0, False
    deadline = time.monotonic() + 60
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            producer.produce(args.topic, key=f"bulk-{seq:06d}".encode(), value=bulk_value(seq),
                             on_delivery=on_delivery)
            seq += 1
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
        if not announced and len(delivered) >= 20:
            print("READY", flush=True)
            announced = True
    result["stop_requested_at"] = time.time()
    producer.flush(30)
    result["produced"] = sorted(delivered, key=lambda r: r["seq"])
    result["value_generator"] = (f"value = (b'bulk-%06d ' % seq) repeated and cut to {BULK_VALUE_SIZE} bytes; "
                                 "key = b'bulk-%06d' % seq")


def seed(args, result: dict) -> None:
    """Messages written before a capture starts, so a later fetch in the capture has data to return."""
    plan = [PlannedMessage(f"seed-{i}".encode(), f"seeded value {i}".encode(), "none") for i in range(3)]
    producer = ck.Producer(base_config(args.port, f"{CLIENT}-seeder"))
    result["produced"] += produce(producer, args.topic, plan, ACKS_ALL)


COMMANDS = {"produce-consume": produce_consume, "admin": admin, "transactions": transactions,
            "stream": stream, "seed": seed}


def main() -> None:
    args = workload_parser(__doc__, COMMANDS).parse_args()
    log_fd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log_fd, 2)  # librdkafka's default logger writes to fd 2
    result = new_result(client_info(), args.topic)
    COMMANDS[args.command](args, result)
    gc.collect()  # destroy every client so librdkafka has logged its last request
    result["requests_sent"] = requests_in_log(Path(args.log).read_text(errors="replace"), LIBRDKAFKA_SENT)
    write_json(args.out, result)


if __name__ == "__main__":
    main()
