"""Aborted transactions in the records table when the broker's list is empty or missing: the ABORT
marker (fetched) and the EndTxn with committed=false (produced) mark the transaction's records,
and ``aborted_by`` names the rule; a COMMIT marker or a committing EndTxn marks nothing."""

from __future__ import annotations

from kdissect.engines import local
from kdissect.options import Options
from kdissect.tables.columns import cells
from kdissect.tables.sink import Columns, TableSink
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.encoder import encode_request, encode_response
from kdissect.testing.records_encode import control_record, encode_batch, new_record
from kdissect.testing.synthetic import MS, T0

PID, EPOCH = 42, 3
ABORT, COMMIT = 0, 1


def _txn_batch(base: int, keys: list[bytes]) -> bytes:
    recs = [new_record(k, b"v", offset=i) for i, k in enumerate(keys)]
    return encode_batch(recs, base_offset=base, producer_id=PID, producer_epoch=EPOCH, transactional=True)


def _marker(offset: int, kind: int) -> bytes:
    return encode_batch(
        [control_record(kind, coordinator_epoch=1)],
        base_offset=offset,
        producer_id=PID,
        producer_epoch=EPOCH,
        transactional=True,
        control=True,
    )


def _fetch(cid: int, records: bytes, aborted: list | None) -> list[tuple[int, bytes]]:
    req = {
        "max_wait_ms": 100,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "topics": [{"topic": "payments", "partitions": [{"partition": 1, "fetch_offset": 0}]}],
    }
    resp = {
        "responses": [
            {
                "topic": "payments",
                "partitions": [
                    {"partition_index": 1, "high_watermark": 10, "records": records, "aborted_transactions": aborted}
                ],
            }
        ]
    }
    return [
        (0, encode_request(1, 11, req, correlation_id=cid, client_id="c")),
        (1, encode_response(1, 11, resp, correlation_id=cid)),
    ]


def _produce(cid: int, batch: bytes) -> list[tuple[int, bytes]]:
    req = {
        "acks": -1,
        "timeout_ms": 500,
        "topic_data": [{"name": "payments", "partition_data": [{"index": 1, "records": batch}]}],
    }
    resp = {"responses": [{"name": "payments", "partition_responses": [{"index": 1, "base_offset": 10 * cid}]}]}
    return [
        (0, encode_request(0, 9, req, correlation_id=cid, client_id="p")),
        (1, encode_response(0, 9, resp, correlation_id=cid)),
    ]


def _end_txn(cid: int, committed: bool) -> list[tuple[int, bytes]]:
    req = {"transactional_id": "t", "producer_id": PID, "producer_epoch": EPOCH, "committed": committed}
    return [
        (0, encode_request(26, 3, req, correlation_id=cid, client_id="p")),
        (1, encode_response(26, 3, {"error_code": 0}, correlation_id=cid)),
    ]


def _records(msgs: list[tuple[int, bytes]], **options) -> dict[str, list]:
    timed = [(d, m, T0 + i * MS) for i, (d, m) in enumerate(msgs)]
    events = local.events_from(tcp_conversation(timed), Options())
    pieces: list = []

    def spill(name: str, columns: Columns) -> None:  # every table is handed over; the records are kept
        if name == "records":
            pieces.append(columns)

    table = TableSink(["records"], Options(**options), spill=spill)
    table.consume_all(events)
    pieces.append(table.columns("records"))
    names = ("direction", "key", "aborted", "aborted_by")
    return {n: [v for piece in pieces for v in cells(piece[n])] for n in names}


def _marked(rows: dict[str, list]) -> list[tuple]:
    return list(zip(rows["direction"], rows["key"], rows["aborted"], rows["aborted_by"], strict=True))


def test_an_abort_marker_marks_the_fetched_records_of_its_transaction() -> None:
    records = _txn_batch(0, [b"a0", b"a1"]) + _marker(2, COMMIT) + _txn_batch(3, [b"b0"]) + _marker(4, ABORT)
    rows = _records(_fetch(1, records, aborted=[]))
    assert [r for r in _marked(rows) if not r[1].startswith(b"\x00")] == [  # (control records' keys)
        ("fetch", b"a0", False, None),
        ("fetch", b"a1", False, None),
        ("fetch", b"b0", True, "abort_marker"),
    ]


def test_a_marker_in_a_later_fetch_response_still_marks_the_records() -> None:
    rows = _records(_fetch(1, _txn_batch(0, [b"x"]), aborted=None) + _fetch(2, _marker(1, ABORT), aborted=None))
    assert _marked(rows)[0] == ("fetch", b"x", True, "abort_marker")


def test_end_txn_with_committed_false_marks_the_produced_records() -> None:
    msgs = _produce(1, _txn_batch(0, [b"k1"])) + _end_txn(2, True) + _produce(3, _txn_batch(0, [b"k2", b"k3"]))
    rows = _records(msgs + _end_txn(4, False))
    assert _marked(rows) == [
        ("produce", b"k1", False, None),
        ("produce", b"k2", True, "end_txn"),
        ("produce", b"k3", True, "end_txn"),
    ]


def test_the_brokers_list_is_named_as_the_rule_when_it_marks() -> None:
    rows = _records(_fetch(1, _txn_batch(5, [b"y"]), aborted=[{"producer_id": PID, "first_offset": 5}]))
    assert _marked(rows) == [("fetch", b"y", True, "aborted_transactions")]


def test_records_of_an_open_transaction_are_held_back_from_spilling_until_its_outcome() -> None:
    """Spilled every 2 rows, but the transaction's outcome comes 3 Produce requests later."""
    msgs = [m for cid in range(1, 4) for m in _produce(cid, _txn_batch(0, [b"r%d" % cid]))] + _end_txn(9, False)
    rows = _records(msgs, spill_rows=2)
    assert _marked(rows) == [("produce", b"r%d" % i, True, "end_txn") for i in range(1, 4)]
