"""Shared pieces of the capture workloads: the message plan, how bytes are written into ground truth,
and how a client's own debug log is turned into "which requests did it send".

The request counts come from each client's log of what it wrote to the socket, never from the capture,
so they are an independent check on a dissector.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

BROKER_HOST = "127.0.0.1"  # the only address any workload may contact
SESSION_TIMEOUT_MS = 6000  # tansu holds a joining member for half the session timeout
HEARTBEAT_INTERVAL_MS = 2000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

# Kafka protocol api keys by their names in the protocol spec, plus the older names some clients log.
API_KEYS: dict[str, int] = {
    name: key
    for key, name in enumerate(
        [
            "Produce", "Fetch", "ListOffsets", "Metadata", "LeaderAndIsr", "StopReplica", "UpdateMetadata",
            "ControlledShutdown", "OffsetCommit", "OffsetFetch", "FindCoordinator", "JoinGroup", "Heartbeat",
            "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "SaslHandshake", "ApiVersions", "CreateTopics",
            "DeleteTopics", "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch", "AddPartitionsToTxn",
            "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit", "DescribeAcls", "CreateAcls",
            "DeleteAcls", "DescribeConfigs", "AlterConfigs", "AlterReplicaLogDirs", "DescribeLogDirs",
            "SaslAuthenticate", "CreatePartitions", "CreateDelegationToken", "RenewDelegationToken",
            "ExpireDelegationToken", "DescribeDelegationToken", "DeleteGroups", "ElectLeaders",
            "IncrementalAlterConfigs", "AlterPartitionReassignments", "ListPartitionReassignments", "OffsetDelete",
            "DescribeClientQuotas", "AlterClientQuotas", "DescribeUserScramCredentials", "AlterUserScramCredentials",
            "Vote", "BeginQuorumEpoch", "EndQuorumEpoch", "DescribeQuorum", "AlterPartition", "UpdateFeatures",
            "Envelope", "FetchSnapshot", "DescribeCluster", "DescribeProducers", "BrokerRegistration",
            "BrokerHeartbeat", "UnregisterBroker", "DescribeTransactions", "ListTransactions", "AllocateProducerIds",
            "ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "ControllerRegistration", "GetTelemetrySubscriptions",
            "PushTelemetry", "AssignReplicasToDirs", "ListClientMetricsResources", "DescribeTopicPartitions"
        ]
    )
} | {"ApiVersion": 18, "Offset": 2, "ListOffset": 2, "GroupCoordinator": 10}

# "Sent MetadataRequest (v12, 46 bytes @ 0, CorrId 2)"
LIBRDKAFKA_SENT = re.compile(r"Sent (\w+?)Request \(v(\d+),")
# "Sending request 2 MetadataRequest(version=12, ..."
KAFKA_PYTHON_SENT = re.compile(r"Sending request \d+ (\w+?)Request\(version=(\d+)")
# "Request to 127.0.0.1:9092 2: MetadataRequest_v5(..."
AIOKAFKA_SENT = re.compile(r"Request to \S+ \d+: (\w+?)Request_v(\d+)\(")


def bootstrap(port: int) -> str:
    """The bootstrap address for a broker on this machine (loopback only, by construction)."""
    return f"{BROKER_HOST}:{port}"


def describe_bytes(data: bytes | None) -> dict | None:
    """Bytes as ground truth: always hex, plus text when they are valid UTF-8 (None stays None)."""
    if data is None:
        return None
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {"len": len(data), "hex": data.hex(), "text": text}


def describe_headers(headers: Iterable[tuple[str, bytes | None]] | None) -> list[dict]:
    """Record headers in order, keys as text and values as `describe_bytes`."""
    return [{"key": key, "value": describe_bytes(value)} for key, value in headers or ()]


@dataclass(frozen=True)
class PlannedMessage:
    """One message a workload is going to produce; the same plan is used by every client."""

    key: bytes | None
    value: bytes | None
    codec: str
    headers: tuple[tuple[str, bytes], ...] = field(default=())

    def to_json(self) -> dict:
        return {
            "key_hex": None if self.key is None else self.key.hex(),
            "value_hex": None if self.value is None else self.value.hex(),
            "codec": self.codec,
            "headers": [[k, v.hex()] for k, v in self.headers],
        }


def message_plan(client: str, codecs: Iterable[str], per_codec: int = 3, pad: int = 0) -> list[PlannedMessage]:
    """Small keyed messages with headers for each codec, plus edge cases in the uncompressed batch.

    The values repeat a phrase so the compressed batches really are smaller than the plain ones;
    `pad` adds filler so values span more than a snap length.
    """
    plan: list[PlannedMessage] = []
    for codec in codecs:
        for i in range(per_codec):
            value = f"{codec} message {i} from {client}: " + "lorem ipsum dolor " * 4 + "x" * pad
            headers = [("trace-id", f"{client}-{codec}-{i}".encode()), ("source", client.encode())]
            if i == 0:
                headers.append(("binary", bytes([0, 1, 254, 255])))
            plan.append(PlannedMessage(f"{client}-{codec}-{i}".encode(), value.encode(), codec, tuple(headers)))
        if codec == "none":
            plan += [
                PlannedMessage(None, b"message without a key", codec, (("kind", b"no-key"),)),
                PlannedMessage(b"tombstone-key", None, codec, (("kind", b"tombstone"),)),
                PlannedMessage(b"empty-value-key", b"", codec),
                PlannedMessage(bytes([0, 159, 146, 150, 255]), b"binary key", codec, (("kind", b"binary-key"),)),
            ]
    return plan


def produced_record(
    message: PlannedMessage,
    topic: str,
    partition: int | None,
    offset: int | None,
    *,
    acks: int | str,
    error: str | None = None,
    **extra: object,
) -> dict:
    """Ground truth for one produce call, as the client reported its outcome."""
    return {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "key": describe_bytes(message.key),
        "value": describe_bytes(message.value),
        "headers": describe_headers(message.headers),
        "codec": message.codec,
        "acks": acks,
        "delivered": error is None,
        "error": error,
        **extra,
    }


def consumed_record(
    topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None, headers
) -> dict:
    """Ground truth for one message the client handed to the application."""
    return {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "key": describe_bytes(key),
        "value": describe_bytes(value),
        "headers": describe_headers(headers),
    }


def commit_record(group_id: str, topic: str, partition: int, offset: int, **extra: object) -> dict:
    """One committed offset (the next offset to read, as Kafka stores it)."""
    return {"group_id": group_id, "topic": topic, "partition": partition, "offset": offset, **extra}


def count_requests(sent: Iterable[tuple[str, int]]) -> list[dict]:
    """Turn (api name, version) pairs from a client log into sorted counts with api keys."""
    # librdkafka logs one request as "IncrementalAlterConfigsRequestRequest": drop the doubled suffix.
    named = ((name.removesuffix("Request"), version) for name, version in sent)
    counts = Counter((API_KEYS.get(name), name, version) for name, version in named)
    rows = [
        {"api_key": key, "api_name": name, "api_version": version, "count": n}
        for (key, name, version), n in counts.items()
    ]
    return sorted(rows, key=lambda r: (r["api_key"] is None, r["api_key"] or 0, r["api_version"]))


def requests_in_log(text: str, pattern: re.Pattern[str]) -> list[dict]:
    """Count the requests a client logged as sent; `pattern` captures (name, version)."""
    return count_requests((m.group(1), int(m.group(2))) for m in pattern.finditer(text))


def expected_api_keys(requests: Iterable[dict]) -> list[int]:
    """The distinct request api keys a capture of this run should contain."""
    return sorted({r["api_key"] for r in requests if r["api_key"] is not None})


def workload_parser(description: str, commands: Iterable[str]) -> argparse.ArgumentParser:
    """The command line every Python workload shares."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("command", choices=list(commands))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True, help="where to write what the workload did (JSON)")
    parser.add_argument("--log", type=Path, required=True, help="where the client's debug log goes")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--codecs", default=",".join(CODECS))
    parser.add_argument("--pad", type=int, default=0, help="extra bytes of filler per value")
    return parser


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")


def summarize(value: object) -> object:
    """A JSON-friendly picture of an admin call's result (enough to compare with the wire)."""
    if isinstance(value, dict):
        return {str(k): summarize(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [summarize(v) for v in value]
    if value is None or isinstance(value, int | str | float | bool):
        return value
    if hasattr(value, "_asdict"):
        return summarize(value._asdict())
    if hasattr(value, "__dict__"):
        return {k: summarize(v) for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


def record_admin_call(result: dict, op: str, call, **args: object) -> None:
    """Run one admin call and record its arguments and outcome; a refusal is ground truth too."""
    entry: dict = {"op": op, "args": args}
    try:
        entry |= {"ok": True, "result": summarize(call())}
    except Exception as exc:  # whatever the client raised is what happened on the wire
        entry |= {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    result["admin_ops"].append(entry)


def new_result(client: dict, topic: str) -> dict:
    """The skeleton every workload fills in; keys are the same for all clients."""
    return {"client": client, "topic": topic, "topics_created": [], "produced": [], "consumed": [],
            "groups": [], "commits": [], "admin_ops": [], "transactions": [], "acks0_used": False, "notes": []}
