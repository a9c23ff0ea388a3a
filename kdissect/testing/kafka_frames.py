"""Builders of real Kafka frames for tests, using the project's schema-driven encoder."""

from __future__ import annotations

from kdissect.testing.encoder import encode_request, encode_response


def metadata_request(cid: int, topics: list[str] | None = None, version: int = 9) -> bytes:
    body = {"topics": [{"name": t} for t in (topics or ["orders"])], "allow_auto_topic_creation": False}
    return encode_request(3, version, body, correlation_id=cid, client_id="test-client")


def metadata_response(cid: int, topics: list[str] | None = None, version: int = 9, error: int = 0) -> bytes:
    body = {
        "brokers": [{"node_id": 1, "host": "broker-1", "port": 9092, "rack": "r1"}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [
            {"error_code": error, "name": t, "partitions": [{"partition_index": 0, "leader_id": 1}]}
            for t in (topics or ["orders"])
        ],
    }
    return encode_response(3, version, body, correlation_id=cid)


def produce_request(cid: int, acks: int = 1, records: bytes = b"rec", topic: str = "orders", version: int = 9) -> bytes:
    body = {
        "acks": acks,
        "timeout_ms": 1000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 2, "records": records}]}],
    }
    return encode_request(0, version, body, correlation_id=cid, client_id="producer-1")


def produce_response(cid: int, error: int = 0, topic: str = "orders", version: int = 9) -> bytes:
    body = {
        "responses": [
            {"name": topic, "partition_responses": [{"index": 2, "error_code": error, "base_offset": 41}]}
        ],
        "throttle_time_ms": 3,
    }
    return encode_response(0, version, body, correlation_id=cid)
