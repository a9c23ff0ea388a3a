"""Rows of the detail tables: the few request/response fields the analysis needs beyond the exchange.

- ``request_params``: Fetch ``max_wait_ms``/``min_bytes``/isolation, Produce ``acks`` and transactional id,
  JoinGroup timeouts (what makes a latency long by design);
- ``group_events``: consumer-group requests (FindCoordinator for a group, JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup, OffsetCommit, KIP-848 ConsumerGroupHeartbeat) with generations and the assignments
  decoded from the consumer-protocol bytes;
- ``txn_events``: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn;
- ``metadata_partitions``: every partition of every Metadata answer (leader, replicas, ISR, offline).

Fields are read by their schema names from the decoded bodies, whatever the version (a field a
version lacks is null).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..decoders import DecodeError, apis, decode_data
from ..decoders.error_codes import error_name
from ..events import Exchange, KafkaMessage
from .rows import TableRows

_PARAMS = {apis.key_of(n) for n in ("Fetch", "Produce", "JoinGroup")}
_GROUPS = {
    apis.key_of(n)
    for n in (
        "FindCoordinator",
        "JoinGroup",
        "Heartbeat",
        "LeaveGroup",
        "SyncGroup",
        "OffsetCommit",
        "ConsumerGroupHeartbeat",
    )
}
_TXNS = {
    apis.key_of(n) for n in ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit")
}
_METADATA = apis.key_of("Metadata")
# The apis whose rows here read more of the bodies than request_params' fields (and Metadata, which
# names topics): the native pairing hands their exchanges to the session (tables/detail_walk.py lane_spec).
BODY_APIS = frozenset({*_GROUPS, *_TXNS, _METADATA})
PARAMS_APIS = frozenset(_PARAMS)
# The request_params table's columns (its request fields by their schema names after the first three).
PARAMS = ("connection_id", "correlation_id", "api_key", "max_wait_ms", "min_bytes", "isolation_level", "acks",
          "transactional_id", "session_timeout_ms", "rebalance_timeout_ms")


def _body(msg: KafkaMessage | None) -> dict[str, Any]:
    return msg.body if msg is not None and msg.body is not None else {}


def _error(body: Mapping[str, Any]) -> str | None:
    code = body.get("error_code")
    return error_name(code) if isinstance(code, int) else None


def _first_nested_error(body: Mapping[str, Any]) -> str | None:
    """The first non-zero error code below the top level (per-partition, per-member errors)."""
    for value in body.values():
        for item in value if isinstance(value, list) else ():
            if isinstance(item, dict):
                found = (_error(item) if item.get("error_code") else None) or _first_nested_error(item)
                if found:
                    return found
    return None


def partition_list(topics: Sequence[Mapping[str, Any]], name_key: str = "name") -> str:
    """``orders[0,1] payments[2]`` from a list of topics with their partitions."""
    out = []
    for t in topics:
        numbers = [p if isinstance(p, int) else p.get("partition_index") for p in t.get("partitions") or []]
        out.append(f"{t.get(name_key) or t.get('topic_id')}[{','.join(str(n) for n in numbers)}]")
    return " ".join(out)


def decoded_assignment(raw: bytes | None) -> str | None:
    """A consumer-protocol assignment (SyncGroup answer) as ``topic[partitions]``, or why it is not."""
    if not raw:
        return None
    try:
        value = decode_data("ConsumerProtocolAssignment", raw)
    except DecodeError as exc:
        return f"(undecodable assignment: {exc})"
    return partition_list(value["data"].get("assigned_partitions") or [], "topic")


def _ids(values: Sequence[int] | None) -> str:
    return ",".join(str(v) for v in values or [])


class DetailRows:
    """Adds an exchange's rows to whichever detail tables are wanted; remembers the topic names
    Metadata gave (KIP-848 assignments name topics by id)."""

    def __init__(self, wanted: set[str]) -> None:
        self.wanted = wanted
        self.topic_names: dict[Any, str] = {}

    def add(self, ex: Exchange, rows: Mapping[str, TableRows]) -> None:
        req = ex.request
        if req is None:
            return
        key = req.api_key
        if key in _PARAMS and "request_params" in self.wanted:
            rows["request_params"].append_values(PARAMS, (), (self._params(ex),))
        if key in _GROUPS and "group_events" in self.wanted:
            row = self._group(ex)
            if row is not None:
                rows["group_events"].append(row)
        if key in _TXNS and "txn_events" in self.wanted:
            rows["txn_events"].append(self._txn(ex))
        if key == _METADATA:
            self._metadata(ex, rows["metadata_partitions"] if "metadata_partitions" in self.wanted else None)

    @staticmethod
    def _base(ex: Exchange) -> dict[str, Any]:
        req, resp = ex.request, ex.response
        assert req is not None
        return {
            "connection_id": ex.conn_id,
            "correlation_id": req.correlation_id,
            "api_name": apis.name_of(req.api_key),
            "request_ts": req.ts_first,
            "response_ts": resp.ts_first if resp else None,
            "latency_ms": (resp.ts_first - req.ts_last) / 1e6 if resp else None,
            "client_id": (req.header or {}).get("client_id"),
        }

    @staticmethod
    def _params(ex: Exchange) -> tuple[Any, ...]:
        """The request_params row, as values in ``PARAMS``' order."""
        req = _body(ex.request)
        return (ex.conn_id, ex.request.correlation_id, ex.request.api_key,  # type: ignore[union-attr]
                *(req.get(name) for name in PARAMS[3:]))

    def _group(self, ex: Exchange) -> dict[str, Any] | None:
        req, resp = _body(ex.request), _body(ex.response)
        name = apis.name_of(ex.request.api_key)  # type: ignore[union-attr]
        row = self._base(ex)
        if name == "FindCoordinator":
            if req.get("key_type", 0) != 0:  # a transaction (or share) coordinator: not about a group
                return None
            row["group_id"] = req.get("key") or ",".join(str(k) for k in req.get("coordinator_keys") or [])
        else:
            row["group_id"] = req.get("group_id")
        members = req.get("members") or []
        row["member_id"] = (
            resp.get("member_id") or req.get("member_id") or ",".join(str(m.get("member_id")) for m in members) or None
        )
        request_generation = req.get("generation_id", req.get("generation_id_or_member_epoch", req.get("member_epoch")))
        row["generation"] = resp.get("generation_id", resp.get("member_epoch", request_generation))
        row["protocol"] = resp.get("protocol_name") or req.get("protocol_name")
        row["leader"] = resp.get("leader")
        row["members"] = len(resp["members"]) if name == "JoinGroup" and "members" in resp else None
        if name == "SyncGroup":
            row["assignment"] = decoded_assignment(resp.get("assignment"))
        elif name == "ConsumerGroupHeartbeat" and isinstance(resp.get("assignment"), dict):
            named = [
                {**t, "name": self.topic_names.get(t.get("topic_id"))}
                for t in resp["assignment"].get("topic_partitions") or []
            ]
            row["assignment"] = partition_list(named)
        row["error_name"] = _error(resp) or _first_nested_error(resp)
        return row

    def _txn(self, ex: Exchange) -> dict[str, Any]:
        req, resp = _body(ex.request), _body(ex.response)
        name = apis.name_of(ex.request.api_key)  # type: ignore[union-attr]
        row = self._base(ex)
        first = (req.get("transactions") or [{}])[0]  # AddPartitionsToTxn v4+: one entry per transaction
        row["transactional_id"] = (
            req.get("transactional_id") or req.get("v3_and_below_transactional_id") or first.get("transactional_id")
        )
        for field in ("producer_id", "producer_epoch"):
            row[field] = resp.get(field, req.get(field, req.get(f"v3_and_below_{field}", first.get(field))))
        row["committed"] = req.get("committed")
        topics = req.get("v3_and_below_topics") or first.get("topics") or req.get("topics") or []
        row["partitions"] = partition_list(topics) if name in ("AddPartitionsToTxn", "TxnOffsetCommit") else None
        row["group_id"] = req.get("group_id")
        row["error_name"] = _error(resp) or _first_nested_error(resp)
        return row

    def _metadata(self, ex: Exchange, rows: TableRows | None) -> None:
        resp = _body(ex.response)
        base = {
            "connection_id": ex.conn_id,
            "correlation_id": ex.request.correlation_id,  # type: ignore[union-attr]
            "response_ts": ex.response.ts_first if ex.response else None,
        }
        for t in resp.get("topics") or []:
            if t.get("name") and t.get("topic_id") is not None:
                self.topic_names[t["topic_id"]] = t["name"]
            if rows is None:
                continue
            for p in t.get("partitions") or []:
                rows.append(
                    {
                        **base,
                        "topic": t.get("name") or str(t.get("topic_id")),
                        "partition": p.get("partition_index"),
                        "leader_id": p.get("leader_id"),
                        "leader_epoch": p.get("leader_epoch"),
                        "replicas": _ids(p.get("replica_nodes")),
                        "isr": _ids(p.get("isr_nodes")),
                        "offline_replicas": _ids(p.get("offline_replicas")),
                        "error_name": _error(p),
                    }
                )
