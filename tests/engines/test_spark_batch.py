"""A Spark decode task feeds the core batches of segments, as the local engine does, and the native
lanes pair its exchanges with their detail rows; what each event teaches (a connection opened, a
broker, a topic id, a transaction call) is still placed at the place of the segment it came in, as
one segment at a time placed it (engines/partition.py, the lanes' ``ats``, a piece's ``left_at`` and
``topics_at``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kdissect.engines import partition
from kdissect.events import Exchange, ExchangeRows, KafkaEvent
from kdissect.reassembly.lanes import NativeLanes
from kdissect.tables import merge
from kdissect.tables.columns import TABLES
from kdissect.tables.sink import TableSink
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.synthetic import kafka_messages
from tests.engines.spark_helpers import REAL_CAPTURES, interleaved_rotations, rotate, simulated_pieces

pytestmark = pytest.mark.skipif(not NativeLanes.available(), reason="the native lanes are not built")

TRANSACTIONS = next(p for p in REAL_CAPTURES if "transactions" in p)


def _contents(pieces: list[tuple[str, bytes]]) -> dict[str, list]:
    """Every table's and side piece's rows, in the order the tasks made them (pieces joined: where a
    task cut its pieces may differ with the batches' sizes)."""
    rows: dict[str, list] = {}
    for name, data in pieces:
        if name in TABLES or name in (merge.OPENED, merge.TOPICS, merge.JOURNAL):
            rows.setdefault(name, []).extend(merge.read_ipc(data).to_pylist())
        elif name == merge.STATS:
            rows.setdefault(name, []).append(data)
    return rows


def _inputs(tmp_path: Path) -> list[list[str]]:
    """Each real capture alone (its read task decodes it), two rotated into files read by decode tasks,
    and rotations that interleave in time (places ordered by time)."""
    alone = [[path] for path in REAL_CAPTURES]
    rotated = [rotate(path, tmp_path / Path(path).stem, cuts=3) for path in REAL_CAPTURES
               if path.endswith(".pcap") and ("transactions" in path or "admin" in path)]  # fmt: skip
    return [*alone, *rotated, interleaved_rotations(tmp_path / "interleaved")]


def test_batches_place_everything_where_one_segment_at_a_time_did(tmp_path: Path, monkeypatch) -> None:
    for paths in _inputs(tmp_path):
        batched = _contents(simulated_pieces(paths)[0])
        monkeypatch.setattr(partition, "SEGMENT_BATCH_BYTES", 2000)  # (batches cut by payload bytes)
        by_bytes = _contents(simulated_pieces(paths)[0])
        monkeypatch.setattr(partition, "SEGMENT_BATCH", 1)
        one_by_one = _contents(simulated_pieces(paths)[0])
        monkeypatch.undo()
        assert batched.keys() == one_by_one.keys() == by_bytes.keys(), paths
        for name, rows in one_by_one.items():
            assert batched[name] == rows == by_bytes[name], (paths, name)


@pytest.fixture
def chatty(tmp_path: Path) -> str:
    """A producer's 300 small round trips on one connection."""
    produce_round_trips = [m for i, m in enumerate(kafka_messages(300, payload=200)) if i % 4 >= 2]
    capture = tmp_path / "chatty.pcap"
    capture.write_bytes(write_capture(tcp_conversation(produce_round_trips, client=("10.0.0.1", 40000),
                                                       server=("10.0.0.2", 9092))))  # fmt: skip
    return str(capture)


def test_a_decode_task_hands_the_lanes_batches_and_they_pair_its_exchanges(chatty: str, monkeypatch) -> None:
    """Chatty traffic: a lane call per batch, not per segment, and the exchanges paired in the lanes
    with their detail rows, not one Exchange each through the Python session."""
    counts = {"runs": 0, "segments": 0, "lane exchanges": 0, "session exchanges": 0}
    run, segment, consume = NativeLanes.run, partition.PartitionDecoder.segment, TableSink.consume

    def counted_run(self: NativeLanes, *args: Any, **kwargs: Any) -> int:
        counts["runs"] += 1
        return run(self, *args, **kwargs)

    def counted_segment(self: partition.PartitionDecoder, *args: Any) -> None:
        counts["segments"] += 1
        return segment(self, *args)

    def counted_consume(self: TableSink, event: KafkaEvent) -> None:
        if type(event) is ExchangeRows and event.details is not None:
            counts["lane exchanges"] += len(event)
        elif type(event) is Exchange:
            counts["session exchanges"] += 1
        return consume(self, event)

    monkeypatch.setattr(NativeLanes, "run", counted_run)
    monkeypatch.setattr(partition.PartitionDecoder, "segment", counted_segment)
    monkeypatch.setattr(TableSink, "consume", counted_consume)
    simulated_pieces([chatty])
    assert counts["segments"] > 500
    assert counts["runs"] * 20 < counts["segments"], counts
    assert counts["lane exchanges"] > 290 and counts["session exchanges"] < 10, counts


def test_pieces_say_where_their_left_rows_and_topic_ids_came_in(chatty: str) -> None:
    """The lanes' details piece has a segment index per left tuple and per topic id learned."""
    pieces: list[ExchangeRows] = []
    consume = TableSink.consume

    def kept(self: TableSink, event: KafkaEvent) -> None:
        if type(event) is ExchangeRows and event.details is not None:
            pieces.append(event)
        return consume(self, event)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(TableSink, "consume", kept)
        simulated_pieces([chatty, TRANSACTIONS])
    assert pieces
    for piece in pieces:
        parts = piece.details
        assert len(parts.left_at) == len(parts.left) and len(parts.topics_at) == len(parts.topics)
        assert all(0 <= at < partition.SEGMENT_BATCH for at in parts.left_at + parts.topics_at)
        assert parts.left_at == sorted(parts.left_at) and parts.topics_at == sorted(parts.topics_at)
    assert max(len(set(p.details.left_at)) for p in pieces) > 50  # (a piece spans many segments)


def test_a_piece_s_topic_ids_are_each_row_s_text_whichever_object_holds_it() -> None:
    """Told apart by identity, an id held by two objects still gets one text per row; the zero id and
    None none; runs expanded per record; no id at all: a null column."""
    from uuid import UUID, uuid4

    from kdissect.tables.columns import Runs

    a, zero = uuid4(), UUID(int=0)
    rows = [None, a, UUID(a.hex), zero, None, a]
    assert partition._topic_ids(rows).to_pylist() == [None, str(a), str(a), None, None, str(a)]
    runs = Runs([a, None, UUID(int=0), UUID(a.hex)], [2, 1, 3, 1])
    assert partition._topic_ids(runs).to_pylist() == [str(a)] * 2 + [None] * 4 + [str(a)]
    none = partition._topic_ids(Runs([None, zero], [2, 3]))
    assert none.null_count == len(none) == 5
    assert partition._topic_ids([]).to_pylist() == []
