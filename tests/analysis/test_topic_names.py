"""A topic known by id only (Fetch v13+) whose name Metadata gives only later in the capture: the
local report's figures name it at the end of the run, as the Spark driver does, however many rows
of it were handed over before the name came."""

from __future__ import annotations

from pathlib import Path

from kdissect.analysis.report_figures import ReportFigures
from kdissect.engines import local
from kdissect.options import Options
from kdissect.testing.cluster import PAYMENTS_ID, Connection, metadata
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.records_encode import encode_batch, new_record

FETCHES = 6


def _late_name_capture(path: Path, records: bytes | None = None) -> Path:
    """Fetches of payments[0] by id (answered with ``records``, if given), then (later, on another
    connection) the Metadata naming it."""
    fetcher, asker = Connection(1, 41001), Connection(2, 41002)
    for i in range(FETCHES):
        request = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20,
                   "topics": [{"topic_id": PAYMENTS_ID, "partitions": [{"partition": 0, "fetch_offset": i,
                                                                         "partition_max_bytes": 1 << 20}]}]}
        answer = {"responses": [{"topic_id": PAYMENTS_ID, "partitions": [{"partition_index": 0,
                                                                          "high_watermark": 10 + i,
                                                                          "records": records}]}]}
        fetcher.call(1, 13, request, answer, at_ms=10 * i, latency_ms=2, client_id="late-consumer")
    asker.call(3, 12, {"topics": None, "allow_auto_topic_creation": False}, metadata(), at_ms=1000, latency_ms=1,
               client_id="admin")
    segments = sorted([*fetcher.segments(), *asker.segments()], key=lambda s: s.ts_ns)
    path.write_bytes(write_capture(segments))
    return path


def test_a_topic_named_after_its_rows_were_handed_over_is_named_in_the_report(tmp_path: Path) -> None:
    capture = _late_name_capture(tmp_path / "late.pcap")
    figures = ReportFigures(keep_records=True)
    local.analyze([capture], Options(spill_rows=2), figures=figures, counted_only=figures.counted_only)
    by_topic = figures.exchanges.topic_latency("topic")
    assert by_topic["topic"].tolist() == ["payments"] and by_topic["count"].tolist() == [FETCHES]
    lag = figures.exchanges.lag.lag_summary({})
    assert set(lag["topic"]) == {"payments"} and lag["fetches"].sum() == FETCHES


def test_transactional_records_of_a_topic_named_late_are_named_in_the_local_journal(tmp_path: Path) -> None:
    """The transactions section's journal of a local run kept such records with no topic at all
    (their id dropped, then nothing named them); it names them at the end, as the Spark driver does."""
    # 3 records a fetch: past what a sink holds while a transaction is open (OPEN_TXN_HOLD pieces of 2 rows)
    batch = encode_batch([new_record(b"k", b"v", offset=i) for i in range(3)], transactional=True, producer_id=7000,
                         producer_epoch=0, base_sequence=0)  # fmt: skip
    capture = _late_name_capture(tmp_path / "late.pcap", batch)
    figures = ReportFigures(keep_records=True)
    local.analyze([capture], Options(spill_rows=2), figures=figures, counted_only=figures.counted_only)
    assert figures.journal is not None
    assert figures.journal.records()["topic"] == ["payments"] * 3 * FETCHES
    assert figures.journal.total == {("fetch", "payments"): 3 * FETCHES}
