"""aiokafka workload: one producer per codec, then a consumer group that commits each message.

aiokafka logs "Request to HOST:PORT N: XRequest_vV(" at DEBUG level for every request it writes; that
log, written to `--log`, gives the request counts in the ground truth.
"""

from __future__ import annotations

import asyncio
import logging
import time

import aiokafka
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError

from workloads.common import (
    AIOKAFKA_SENT,
    HEARTBEAT_INTERVAL_MS,
    SESSION_TIMEOUT_MS,
    PlannedMessage,
    bootstrap,
    commit_record,
    consumed_record,
    message_plan,
    new_result,
    produced_record,
    requests_in_log,
    workload_parser,
    write_json,
)

CLIENT = "aiokafka"


async def produce(producer: AIOKafkaProducer, topic: str, plan: list[PlannedMessage]) -> list[dict]:
    """Queue all of `plan` at once (so a codec's messages share batches), then await each delivery."""
    futures = [await producer.send(topic, key=m.key, value=m.value, headers=list(m.headers)) for m in plan]
    records = []
    for message, future in zip(plan, futures, strict=True):
        try:
            meta = await future
            records.append(produced_record(message, topic, meta.partition, meta.offset, acks=-1))
        except KafkaError as exc:
            records.append(produced_record(message, topic, None, None, acks=-1, error=repr(exc)))
    return records


async def produce_consume(args, result: dict) -> None:
    codecs = args.codecs.split(",")
    plan = message_plan(CLIENT, codecs, pad=args.pad)
    for codec in codecs:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap(args.port), client_id=f"{CLIENT}-producer-{codec}",
                                    compression_type=None if codec == "none" else codec, acks="all",
                                    linger_ms=5)
        await producer.start()
        if codec == "none":
            partitions = await producer.partitions_for(args.topic)
            result["metadata_requested"] = {"topic": args.topic, "partitions": sorted(partitions)}
        result["produced"] += await produce(producer, args.topic, [m for m in plan if m.codec == codec])
        await producer.stop()

    group_id = f"{CLIENT}-group"
    consumer = AIOKafkaConsumer(args.topic, bootstrap_servers=bootstrap(args.port),
                                client_id=f"{group_id}-consumer", group_id=group_id,
                                session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                                enable_auto_commit=False, auto_offset_reset="earliest")
    result["groups"].append({"group_id": group_id, "session_timeout_ms": SESSION_TIMEOUT_MS,
                             "topics": [args.topic]})
    await consumer.start()
    deadline = time.monotonic() + 40
    got = 0
    while got < len(plan) and time.monotonic() < deadline:
        for tp, records in (await consumer.getmany(timeout_ms=500)).items():
            for r in records:
                got += 1
                result["consumed"].append(consumed_record(r.topic, r.partition, r.offset, r.key, r.value,
                                                          r.headers))
                await consumer.commit({tp: r.offset + 1})
                result["commits"].append(commit_record(group_id, r.topic, r.partition, r.offset + 1))
    await consumer.stop()


def main() -> None:
    args = workload_parser(__doc__, ["produce-consume"]).parse_args()
    logging.basicConfig(level=logging.DEBUG, filename=args.log, filemode="w")
    result = new_result({"library": CLIENT, "version": aiokafka.__version__}, args.topic)
    asyncio.run(produce_consume(args, result))
    logging.shutdown()
    result["requests_sent"] = requests_in_log(args.log.read_text(errors="replace"), AIOKAFKA_SENT)
    write_json(args.out, result)


if __name__ == "__main__":
    main()
