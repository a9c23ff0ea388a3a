"""kafka-python workloads: produce/consume (with an acks=0 producer) and the admin client.

kafka-python logs every request it writes ("Sending request N XRequest(version=V") at DEBUG level;
that log, written to `--log`, is where the request counts in the ground truth come from.
"""

from __future__ import annotations

import logging
import time

import kafka
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewPartitions,
    NewTopic,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.structs import OffsetAndMetadata

from workloads.common import (
    HEARTBEAT_INTERVAL_MS,
    KAFKA_PYTHON_SENT,
    SESSION_TIMEOUT_MS,
    PlannedMessage,
    bootstrap,
    commit_record,
    consumed_record,
    message_plan,
    new_result,
    produced_record,
    record_admin_call,
    requests_in_log,
    workload_parser,
    write_json,
)

CLIENT = "kafka-python"


def produce(producer: KafkaProducer, topic: str, plan: list[PlannedMessage], acks: int) -> list[dict]:
    """Send `plan` and wait for each future; with acks=0 the broker's offset is not known."""
    futures = [producer.send(topic, key=m.key, value=m.value, headers=list(m.headers)) for m in plan]
    producer.flush(20)
    records = []
    for message, future in zip(plan, futures, strict=True):
        try:
            meta = future.get(timeout=20)
            offset = meta.offset if acks != 0 else None
            records.append(produced_record(message, topic, meta.partition, offset, acks=acks))
        except kafka.errors.KafkaError as exc:
            records.append(produced_record(message, topic, None, None, acks=acks, error=repr(exc)))
    return records


def produce_consume(args, result: dict) -> None:
    """One producer per codec, a fire-and-forget (acks=0) producer, then a group consumer with commits."""
    codecs = args.codecs.split(",")
    plan = message_plan(CLIENT, codecs, pad=args.pad)
    for codec in codecs:
        producer = KafkaProducer(bootstrap_servers=bootstrap(args.port), client_id=f"{CLIENT}-producer-{codec}",
                                 compression_type=None if codec == "none" else codec, acks="all", linger_ms=5)
        if codec == "none":
            result["metadata_requested"] = {"topic": args.topic,
                                            "partitions": sorted(producer.partitions_for(args.topic))}
        result["produced"] += produce(producer, args.topic, [m for m in plan if m.codec == codec], -1)
        producer.close(10)

    fire_and_forget = [PlannedMessage(f"acks0-{i}".encode(), f"sent with acks=0 #{i}".encode(), "none",
                                      (("acks", b"0"),)) for i in range(2)]
    producer = KafkaProducer(bootstrap_servers=bootstrap(args.port), client_id=f"{CLIENT}-acks0", acks=0)
    result["produced"] += produce(producer, args.topic, fire_and_forget, 0)
    producer.close(10)
    result["acks0_used"] = True
    result["notes"].append("tansu answers acks=0 Produce requests although Kafka brokers send no response")

    group_id = f"{CLIENT}-group"
    consumer = KafkaConsumer(bootstrap_servers=bootstrap(args.port), client_id=f"{group_id}-consumer",
                             group_id=group_id, session_timeout_ms=SESSION_TIMEOUT_MS,
                             heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    result["groups"].append({"group_id": group_id, "session_timeout_ms": SESSION_TIMEOUT_MS,
                             "topics": [args.topic]})
    consumer.subscribe([args.topic])
    expected = len(plan) + len(fire_and_forget)
    deadline = time.monotonic() + 40
    got = 0
    while got < expected and time.monotonic() < deadline:
        for tp, records in consumer.poll(timeout_ms=500).items():
            for r in records:
                got += 1
                result["consumed"].append(consumed_record(r.topic, r.partition, r.offset, r.key, r.value,
                                                          r.headers))
                consumer.commit({tp: OffsetAndMetadata(r.offset + 1, None, -1)})
                result["commits"].append(commit_record(group_id, r.topic, r.partition, r.offset + 1))
    result["metadata_topics_listed"] = sorted(consumer.topics())
    consumer.close()


def admin(args, result: dict) -> None:
    """The admin calls tansu answers, plus ones it refuses or that make it drop the connection."""
    client = KafkaAdminClient(bootstrap_servers=bootstrap(args.port), client_id=f"{CLIENT}-admin",
                              request_timeout_ms=10000)
    topics = [("inventory", 2), ("audit", 1)]
    group = "admin-made-group"

    def call(op: str, fn, **kw) -> None:
        record_admin_call(result, op, fn, **kw)

    call("create_topics", lambda: client.create_topics([NewTopic(n, p, 1) for n, p in topics]),
         topics=[{"name": n, "partitions": p, "replication_factor": 1} for n, p in topics])
    result["topics_created"] = [{"name": n, "partitions": p, "by": "admin create_topics"} for n, p in topics]
    call("create_topics_again", lambda: client.create_topics([NewTopic("inventory", 2, 1)]),
         topics=[{"name": "inventory", "partitions": 2}], expect="TOPIC_ALREADY_EXISTS")
    call("list_topics", client.list_topics)
    call("describe_topics", lambda: client.describe_topics(["inventory"]), topics=["inventory"])
    call("describe_cluster", client.describe_cluster)
    call("describe_configs", lambda: client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "inventory")]),
         resource="topic inventory")
    call("describe_configs", lambda: client.describe_configs([ConfigResource(ConfigResourceType.BROKER, "111")]),
         resource="broker 111")
    call("describe_acls", lambda: client.describe_acls(ACLFilter(
        principal=None, host="*", operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(ResourceType.TOPIC, None, ACLResourcePatternType.ANY))),
         filter="any topic")
    call("describe_features", client.describe_features)
    call("create_partitions", lambda: client.create_partitions({"audit": NewPartitions(2)}),
         topic="audit", new_total=2)
    offsets = {TopicPartition("inventory", 0): OffsetAndMetadata(0, "set by admin", -1)}
    call("alter_group_offsets", lambda: client.alter_group_offsets(group, offsets),
         group=group, offsets=[{"topic": "inventory", "partition": 0, "offset": 0, "metadata": "set by admin"}])
    result["commits"].append(commit_record(group, "inventory", 0, 0, via="admin alter_group_offsets",
                                           metadata="set by admin"))
    call("list_groups", client.list_groups)
    call("list_group_offsets", lambda: client.list_group_offsets(group), group=group)
    call("describe_groups", lambda: client.describe_groups([group]), groups=[group])
    call("list_partition_offsets", lambda: client.list_partition_offsets({TopicPartition("inventory", 0): -1}),
         partitions=[["inventory", 0, "latest"]])
    call("delete_records", lambda: client.delete_records({TopicPartition("inventory", 0): 0}),
         partitions=[["inventory", 0, "before offset 0"]])
    call("delete_groups", lambda: client.delete_groups([group]), groups=[group])
    call("delete_topics", lambda: client.delete_topics([n for n, _ in topics]), topics=[n for n, _ in topics])
    result["topics_deleted"] = [n for n, _ in topics]
    call("list_topics", client.list_topics)
    client.close()


COMMANDS = {"produce-consume": produce_consume, "admin": admin}


def main() -> None:
    args = workload_parser(__doc__, COMMANDS).parse_args()
    logging.basicConfig(level=logging.DEBUG, filename=args.log, filemode="w")
    result = new_result({"library": CLIENT, "version": kafka.__version__}, args.topic)
    COMMANDS[args.command](args, result)
    logging.shutdown()
    result["requests_sent"] = requests_in_log(args.log.read_text(errors="replace"), KAFKA_PYTHON_SENT)
    write_json(args.out, result)


if __name__ == "__main__":
    main()
