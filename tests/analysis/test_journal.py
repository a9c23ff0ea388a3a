"""The transaction journal (kdissect.analysis.journal): the transactions section of the kept records
equals pandas' of the records table, whatever the split, and the report's memory for it stays bounded
on a capture with very many transactional batches."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import pytest

from kdissect.analysis.frames import analysis_frames, in_capture_order
from kdissect.analysis.journal import EVENT_LIMIT, RECORD_LIMIT, FirstEvents, Journal
from kdissect.analysis.transactions import NOT_KEPT, record_outcomes, transactional_records, transactions
from kdissect.engines import local
from kdissect.engines.request import Request, run
from kdissect.options import Options
from kdissect.report.build import build_document
from kdissect.tables.columns import cells
from kdissect.testing.cluster import Connection, cluster_capture, fetch, fetched, produce, produced
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.records_encode import control_record, encode_batch, new_record

CAPTURES = sorted(p for p in (Path(__file__).parents[2] / "captures").iterdir() if ".pcap" in p.name)
TRANSACTIONAL = [c for c in CAPTURES if "transactions" in c.name]


@pytest.fixture(scope="module")
def records_capture(tmp_path_factory):
    """Real transactions (the corpus) or, without one, the cluster scenario's transaction."""
    return TRANSACTIONAL[0] if TRANSACTIONAL else cluster_capture(tmp_path_factory.mktemp("c") / "c.pcap")


def _pieces(columns: dict, sizes: list[int]) -> list[dict]:
    values = {name: cells(v) for name, v in columns.items()}
    n, at, out = len(next(iter(values.values()))), 0, []
    for size in sizes:
        out.append({name: v[at:at + size] for name, v in values.items()})
        at += size
        if at >= n:
            break
    return out


def _section(tables: dict, journal: Journal):
    frames = in_capture_order(analysis_frames({**tables, "records": journal.records()}))
    return transactional_records(frames), record_outcomes(frames, journal.not_kept())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_journal_of_any_split_gives_the_records_tables_section(records_capture, seed):
    """Pieces of 2 rows and random sizes, journals merged in random order (pickled, as Spark's are):
    the records listing and their outcomes equal pandas' of the whole records table."""
    tables = local.analyze([records_capture]).tables
    want = in_capture_order(analysis_frames(tables))
    rng = random.Random(seed)
    n = len(cells(tables["records"]["connection_id"]))
    sizes = [2] * n if seed == 0 else [rng.randint(1, 7) for _ in range(n)]
    journals = []
    for piece in _pieces(tables["records"], sizes):
        j = Journal(RECORD_LIMIT)
        j.add(piece)
        journals.append(pickle.loads(pickle.dumps(j)))
    rng.shuffle(journals)
    merged = Journal(RECORD_LIMIT)
    for j in journals:
        merged.merge(j)
    whole = Journal(RECORD_LIMIT)
    whole.add(tables["records"])
    assert merged == whole
    listed, outcomes = _section(tables, merged)
    assert len(listed) > 0
    assert listed.astype(str).equals(transactional_records(want).astype(str))
    assert outcomes.astype(str).equals(record_outcomes(want).astype(str))
    assert merged.not_kept() == {}


def test_past_its_limit_the_journal_keeps_the_first_records_and_counts_the_rest(records_capture):
    """A limit of 2: the two first records in capture order are kept, whatever the split; the others
    are counted per direction and topic, so the outcome counts still add up to every record."""
    tables = local.analyze([records_capture]).tables
    flags = cells(tables["records"]["transactional"])
    total = sum(1 for f in flags if f)
    assert total > 2
    one = Journal(2)
    one.add(tables["records"])
    split = Journal(2)
    for piece in reversed(_pieces(tables["records"], [2] * len(flags))):
        j = Journal(2)
        j.add(piece)
        split.merge(j)
    assert split == one and len(one.rows()) == 2
    first = in_capture_order(analysis_frames(tables))["records"]
    first = first[first.transactional.fillna(False).astype(bool)].head(2)
    kept = analysis_frames({"records": one.records()})["records"]
    assert sorted(kept.offset.tolist()) == sorted(first.offset.tolist())
    _, outcomes = _section(tables, one)
    assert outcomes.records.sum() == total - sum(1 for f, c in zip(flags, cells(tables["records"]["is_control"]),
                                                                   strict=True) if f and c)  # fmt: skip
    assert (outcomes.outcome == NOT_KEPT).any()


@pytest.mark.parametrize("seed", [0, 1])
def test_the_first_events_of_any_split_give_the_transactions_table(records_capture, seed):
    """The transaction events cut in pieces of 2 rows or random sizes, merged in random order: the
    Transactions table equals pandas' of the whole ``txn_events`` table; with a limit of 3 it is the
    table of the 3 first events in request-time order."""
    tables = local.analyze([records_capture]).tables
    want = in_capture_order(analysis_frames(tables))
    rng = random.Random(seed)
    n = len(cells(tables["txn_events"]["connection_id"]))
    sizes = [2] * n if seed == 0 else [rng.randint(1, 4) for _ in range(n)]
    first_three = want["txn_events"].sort_values("request_ts").head(3)
    for limit, expected in ((EVENT_LIMIT, want["txn_events"]), (3, first_three)):
        events = [FirstEvents(limit) for _ in range(n)]
        for piece, first in zip(_pieces(tables["txn_events"], sizes), events, strict=False):
            first.add(piece)
        rng.shuffle(events)
        merged = FirstEvents(limit)
        for first in events:
            merged.merge(pickle.loads(pickle.dumps(first)))
        got = in_capture_order(analysis_frames({"txn_events": merged.events()}))
        assert merged.kept.total == n > 3
        table = transactions(got)
        assert len(table) > 0 and table.astype(str).equals(transactions({"txn_events": expected}).astype(str))


def _many_transactions(path: Path, batches: int) -> Path:
    """One transactional producer writing ``batches`` batches of 2 records, each transaction ended
    by EndTxn(commit) and closed by a COMMIT marker that a read_committed consumer fetches."""
    txn, fetcher = Connection(2, 41001), Connection(3, 41002)
    for i in range(batches):
        at = 1000 + 10 * i
        txn.call(0, 9, produce("payments", 0, -1, 2, "tx-many", 7000), produced("payments", 0, 3 * i), at, 1, "p")
        txn.call(26, 3, {"transactional_id": "tx-many", "producer_id": 7000, "producer_epoch": 0, "committed": True},
                 {}, at + 2, 1, "p")  # fmt: skip
        data = encode_batch([new_record(b"k", b"v", offset=j) for j in range(2)], base_offset=3 * i,
                            transactional=True, producer_id=7000, producer_epoch=0, base_sequence=2 * i)  # fmt: skip
        marker = encode_batch([control_record(1)], base_offset=3 * i + 2, transactional=True, control=True,
                              producer_id=7000, producer_epoch=0)  # fmt: skip
        fetcher.call(1, 12, fetch("payments", 0, 3 * i), fetched("payments", 0, 3 * i + 3, data + marker), at + 5, 1,
                     "c")  # fmt: skip
    segments = sorted((s for c in (txn, fetcher) for s in c.segments()), key=lambda s: s.ts_ns)
    path.write_bytes(write_capture(segments))
    return path


def test_very_many_transactional_batches_keep_the_report_s_journal_bounded(tmp_path):
    """4,000 transactions (12,000 transactional records, produced and fetched) against a limit of
    500: the report keeps 500 records and at most 1,000 request times, its pickled journal stays
    under 100 KB, and every record is still counted in "Records by outcome"."""
    capture = _many_transactions(tmp_path / "many.pcap", 4000)
    result = run(Request([str(capture)], Options(journal_records=500, journal_events=300), report=True))
    figures = result.figures
    assert len(figures.journal.rows()) == 500
    assert figures.exchanges.record_times_held <= 1000
    assert len(pickle.dumps(figures.journal)) < 100_000
    assert len(result.frames["records"]) == 500
    document = build_document(result.frames, result.summary, [str(capture)], figures)
    section = next(s for s in document.sections if s.id == "transactions")
    outcomes = next(t for t in section.blocks if t.title == "Records by outcome").frame
    assert outcomes.records.sum() == 4000 * 2 * 2  # data records produced and fetched
    assert (outcomes.outcome == NOT_KEPT).any()
    assert len(result.frames["txn_events"]) == 300 and figures.txn_events.kept.total == 4000
    assert len(next(t for t in section.blocks if t.title == "Transactions").frame) <= 300
