"""A synthetic three-broker cluster with known trouble, for the analysis and report tests and demos.

Built with the project's own encoder: every frame is a real Kafka frame, every connection a real
TCP conversation. What happens (times in ms after T0) is what the tests assert:

- brokers: node 1 ``10.0.0.11`` rack r1, node 2 ``10.0.0.12`` rack r2, node 3 ``10.0.0.13`` rack r3,
  all on port 9092; Metadata says orders[2] has no leader, orders[1] has ISR 2,3 of replicas 2,3,1
  (1 offline); a later Metadata moves orders[0]'s leader from 1 to 2;
- ``app-producer``: Produce acks=-1 (2 ms, 3 ms, and one slow: 800 ms to node 1), acks=1 (1 ms), acks=0,
  and one answered NOT_LEADER_OR_FOLLOWER for orders[1];
- group ``orders-group`` (``app-consumer-1`` member m1, leader): FindCoordinator, JoinGroup answered
  MEMBER_ID_REQUIRED (a normal step), JoinGroup generation 1 (held 300 ms), SyncGroup orders[0,1],
  Heartbeat answered REBALANCE_IN_PROGRESS, JoinGroup generation 2 (held 500 ms), SyncGroup orders[0,1,2],
  OffsetCommit orders[0] at 150 (log end then 500), LeaveGroup;
- ``app-consumer-1`` fetches orders[0] with max_wait 500 ms: from 100 (high watermark 500, data,
  5 ms), from 105 (no data, held 499 ms: a long poll), from 105 (no data, 1,500 ms: overran its wait),
  from 300 (high watermark 520, data);
- KIP-848 group ``new-group``: ``new-consumer`` heartbeats, epoch 1 then 2;
- ``txn-producer``: InitProducerId (producer 7000), AddPartitionsToTxn payments[0], a transactional
  Produce of 3 records (offsets 10-12), EndTxn abort; ``app-consumer-1`` fetches payments[0] and
  gets the 3 records plus an ABORT marker at 13 with an empty aborted-transactions list;
- ``legacy-app``: Produce v2 (a version Kafka 4.0 removed).
"""

from __future__ import annotations

import uuid
from dataclasses import field
from pathlib import Path

from kdissect.dataclass import dataclass
from kdissect.sources.segment import TcpSegment
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.encoder import encode_data, encode_request, encode_response
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.records_encode import control_record, encode_batch, encode_message_set, new_record

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
BROKERS = [(1, "10.0.0.11", "r1"), (2, "10.0.0.12", "r2"), (3, "10.0.0.13", "r3")]
CLIENT = "10.0.0.1"
PAYMENTS_ID = uuid.UUID("00000000-0000-0000-0000-0000000000a1")


@dataclass
class Connection:
    """One client connection to one broker; ``call`` adds a request and (unless None) its answer."""

    broker: int
    client_port: int
    messages: list[tuple[int, bytes, int]] = field(default_factory=list)
    next_correlation: int = 1

    def call(
        self,
        api_key: int,
        version: int,
        request: dict,
        response: dict | None,
        at_ms: float,
        latency_ms: float,
        client_id: str,
    ) -> None:
        cid = self.next_correlation
        self.next_correlation += 1
        t = T0 + int(at_ms * MS)
        self.messages.append((0, encode_request(api_key, version, request, correlation_id=cid, client_id=client_id), t))
        if response is not None:
            self.messages.append(
                (1, encode_response(api_key, version, response, correlation_id=cid), t + int(latency_ms * MS))
            )

    def segments(self) -> list[TcpSegment]:
        ip = BROKERS[self.broker - 1][1]
        return tcp_conversation(
            sorted(self.messages, key=lambda m: m[2]), client=(CLIENT, self.client_port), server=(ip, 9092)
        )


def metadata(leader_of_orders_0: int = 1, orders: str = "orders") -> dict:
    return {
        "brokers": [{"node_id": n, "host": ip, "port": 9092, "rack": rack} for n, ip, rack in BROKERS],
        "cluster_id": "synthetic",
        "controller_id": 1,
        "topics": [
            {
                "name": orders,
                "topic_id": uuid.UUID(int=0xB0),
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_id": leader_of_orders_0,
                        "replica_nodes": [1, 2, 3],
                        "isr_nodes": [1, 2, 3],
                    },
                    {
                        "partition_index": 1,
                        "leader_id": 2,
                        "replica_nodes": [2, 3, 1],
                        "isr_nodes": [2, 3],
                        "offline_replicas": [1],
                    },
                    {
                        "partition_index": 2,
                        "leader_id": -1,
                        "error_code": 5,
                        "replica_nodes": [3, 1, 2],
                        "isr_nodes": [],
                    },
                ],
            },
            {
                "name": "payments",
                "topic_id": PAYMENTS_ID,
                "partitions": [
                    {"partition_index": 0, "leader_id": 3, "replica_nodes": [3, 1, 2], "isr_nodes": [3, 1, 2]}
                ],
            },
        ],
    }


def produce(
    topic: str, partition: int, acks: int, n: int = 2, transactional_id: str | None = None, producer_id: int = -1
) -> dict:
    records = [new_record(f"k{i}".encode(), b"v" * 100, offset=i) for i in range(n)]
    batch = encode_batch(
        records,
        transactional=producer_id >= 0,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
    )
    return {
        "transactional_id": transactional_id,
        "acks": acks,
        "timeout_ms": 30000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
    }


def produced(topic: str, partition: int, base_offset: int, error: int = 0) -> dict:
    return {
        "responses": [
            {
                "name": topic,
                "partition_responses": [
                    {"index": partition, "error_code": error, "base_offset": base_offset if not error else -1}
                ],
            }
        ]
    }


def fetch(topic: str, partition: int, offset: int) -> dict:
    return {
        "replica_id": -1,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 52428800,
        "isolation_level": 1,
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1048576}],
            }
        ],
    }


def fetched(topic: str, partition: int, high_watermark: int, records: bytes = b"") -> dict:
    return {
        "responses": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "high_watermark": high_watermark,
                        "last_stable_offset": high_watermark,
                        "aborted_transactions": [],
                        "preferred_read_replica": -1,
                        "records": records,
                    }
                ],
            }
        ]
    }


def assignment(topic: str, partitions: list[int]) -> bytes:
    return encode_data(
        "ConsumerProtocolAssignment", 0, {"assigned_partitions": [{"topic": topic, "partitions": partitions}]}
    )


def _producer(c1: Connection, c2: Connection, orders: str, client: str) -> None:
    c1.call(
        18,
        3,
        {"client_software_name": "synth-client", "client_software_version": "1.2.3"},
        {"api_keys": [{"api_key": 0, "min_version": 3, "max_version": 9}]},
        0,
        1,
        client,
    )
    c1.call(3, 12, {"topics": None}, metadata(orders=orders), 5, 1, client)
    c1.call(0, 9, produce(orders, 0, -1), produced(orders, 0, 0), 10, 2, client)
    c1.call(0, 9, produce(orders, 0, 1), produced(orders, 0, 2), 20, 1, client)
    c1.call(0, 9, produce(orders, 0, -1), produced(orders, 0, 4), 30, 800, client)
    c1.call(0, 9, produce(orders, 1, 1), produced(orders, 1, 0, error=6), 900, 1, client)
    c1.call(0, 9, produce(orders, 0, 0), None, 950, 0, client)
    c1.call(3, 12, {"topics": None}, metadata(leader_of_orders_0=2, orders=orders), 4000, 1, client)
    c2.call(0, 9, produce(orders, 1, -1), produced(orders, 1, 0), 40, 3, client)


def _group(coord: Connection, fetcher: Connection) -> None:
    me, group = "app-consumer-1", "orders-group"
    coord.call(
        10,
        4,
        {"key_type": 0, "coordinator_keys": [group]},
        {"coordinators": [{"key": group, "node_id": 3, "host": "10.0.0.13", "port": 9092}]},
        90,
        1,
        me,
    )
    join = {
        "group_id": group,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 30000,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    coord.call(11, 9, {**join, "member_id": ""}, {"error_code": 79, "generation_id": -1, "member_id": "m1"}, 100, 1, me)
    members = [{"member_id": "m1", "metadata": b""}, {"member_id": "m2", "metadata": b""}]
    coord.call(
        11,
        9,
        {**join, "member_id": "m1"},
        {
            "generation_id": 1,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "leader": "m1",
            "member_id": "m1",
            "members": members,
        },
        102,
        300,
        me,
    )
    coord.call(
        14,
        5,
        {
            "group_id": group,
            "generation_id": 1,
            "member_id": "m1",
            "assignments": [{"member_id": "m1", "assignment": assignment("orders", [0, 1])}],
        },
        {"protocol_type": "consumer", "protocol_name": "range", "assignment": assignment("orders", [0, 1])},
        403,
        2,
        me,
    )
    coord.call(12, 4, {"group_id": group, "generation_id": 1, "member_id": "m1"}, {"error_code": 27}, 1000, 1, me)
    coord.call(
        11,
        9,
        {**join, "member_id": "m1"},
        {
            "generation_id": 2,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "leader": "m1",
            "member_id": "m1",
            "members": members[:1],
        },
        1010,
        500,
        me,
    )
    coord.call(
        14,
        5,
        {"group_id": group, "generation_id": 2, "member_id": "m1", "assignments": []},
        {"protocol_type": "consumer", "protocol_name": "range", "assignment": assignment("orders", [0, 1, 2])},
        1511,
        2,
        me,
    )
    coord.call(
        8,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": 2,
            "member_id": "m1",
            "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": 150}]}],
        },
        {"topics": [{"name": "orders", "partitions": [{"partition_index": 0}]}]},
        3000,
        1,
        me,
    )
    coord.call(
        13, 5, {"group_id": group, "members": [{"member_id": "m1"}]}, {"members": [{"member_id": "m1"}]}, 5000, 1, me
    )
    data = encode_batch([new_record(b"k", b"v" * 50, offset=i) for i in range(5)], base_offset=100)
    fetcher.call(1, 12, fetch("orders", 0, 100), fetched("orders", 0, 500, data), 200, 5, me)
    fetcher.call(1, 12, fetch("orders", 0, 105), fetched("orders", 0, 500), 300, 499, me)
    fetcher.call(1, 12, fetch("orders", 0, 105), fetched("orders", 0, 500), 900, 1500, me)
    fetcher.call(1, 12, fetch("orders", 0, 300), fetched("orders", 0, 520, data), 2500, 4, me)


def _transaction(txn: Connection, fetcher: Connection) -> None:
    me, tid = "txn-producer", "tx-1"
    txn.call(
        22,
        4,
        {"transactional_id": tid, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
        {"producer_id": 7000, "producer_epoch": 0},
        2000,
        2,
        me,
    )
    txn.call(
        24,
        3,
        {
            "v3_and_below_transactional_id": tid,
            "v3_and_below_producer_id": 7000,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [{"name": "payments", "partitions": [0]}],
        },
        {"results_by_topic_v3_and_below": [{"name": "payments", "results_by_partition": [{"partition_index": 0}]}]},
        2010,
        1,
        me,
    )
    txn.call(0, 9, produce("payments", 0, -1, 3, tid, 7000), produced("payments", 0, 10), 2020, 2, me)
    txn.call(
        26, 3, {"transactional_id": tid, "producer_id": 7000, "producer_epoch": 0, "committed": False}, {}, 2100, 3, me
    )
    data = encode_batch(
        [new_record(f"k{i}".encode(), b"v" * 100, offset=i) for i in range(3)],
        base_offset=10,
        transactional=True,
        producer_id=7000,
        producer_epoch=0,
        base_sequence=0,
    )
    marker = encode_batch(
        [control_record(0)], base_offset=13, transactional=True, control=True, producer_id=7000, producer_epoch=0
    )
    fetcher.call(1, 12, fetch("payments", 0, 10), fetched("payments", 0, 14, data + marker), 2200, 3, "app-consumer-1")


def _kip848(conn: Connection) -> None:
    me, group = "new-consumer", "new-group"
    hb = {
        "group_id": group,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": ["payments"],
        "topic_partitions": [],
    }
    conn.call(
        68,
        0,
        {**hb, "member_id": "", "member_epoch": 0},
        {
            "member_id": "n1",
            "member_epoch": 1,
            "heartbeat_interval_ms": 5000,
            "assignment": {"topic_partitions": [{"topic_id": PAYMENTS_ID, "partitions": [0]}]},
        },
        50,
        2,
        me,
    )
    for at_ms, epoch in ((3000, 1), (6000, 2)):  # the second answer moves the member to epoch 2
        conn.call(
            68,
            0,
            {**hb, "member_id": "n1", "member_epoch": 1},
            {"member_id": "n1", "member_epoch": epoch, "heartbeat_interval_ms": 5000},
            at_ms,
            1,
            me,
        )


def _legacy(conn: Connection) -> None:
    records = encode_message_set([new_record(b"k", b"old", offset=0)], magic=1)
    conn.call(
        0,
        2,
        {
            "acks": 1,
            "timeout_ms": 1000,
            "topic_data": [{"name": "orders", "partition_data": [{"index": 0, "records": records}]}],
        },
        {"responses": [{"name": "orders", "partition_responses": [{"index": 0, "base_offset": 9}]}]},
        3500,
        1,
        "legacy-app",
    )


def cluster_capture(path: Path, *, orders: str = "orders", producer_client: str = "app-producer") -> Path:
    """Write the scenario (see the module docstring) as a pcap; ``orders``/``producer_client`` rename the
    producer's topic and client id (the escaping tests put hostile text there)."""
    conns = {
        name: Connection(broker, port)
        for name, broker, port in [
            ("p1", 1, 40001),
            ("p2", 2, 40002),
            ("coord", 3, 40003),
            ("fetch", 1, 40004),
            ("txn", 2, 40005),
            ("kip848", 3, 40006),
            ("legacy", 1, 40007),
            ("fetch_payments", 3, 40008),
        ]
    }
    _producer(conns["p1"], conns["p2"], orders, producer_client)
    _group(conns["coord"], conns["fetch"])
    _transaction(conns["txn"], conns["fetch_payments"])
    _kip848(conns["kip848"])
    _legacy(conns["legacy"])
    segments = sorted((s for c in conns.values() for s in c.segments()), key=lambda s: s.ts_ns)
    path.write_bytes(write_capture(segments))
    return path
