"""The Spark tasks' records, made in C for every plain message (a task's records table stays steady),
are the local engine's records, rows and order: every codec, transactional batches, aborted ones,
null keys and headers, payloads kept whole, cut or not at all, pieces inline or staged (payloads read
back by consumers staged as references to the producer's rows: tables/repeats.py) (no Spark: the
engine's steps in-process)."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kdissect.decoders.codecs import CODEC_NAMES
from kdissect.engines import local
from kdissect.options import LENGTHS_ONLY, Options, Payloads
from kdissect.tables import sink
from kdissect.tables.arrow import to_arrow
from kdissect.tables.columns import TABLES
from kdissect.tables.record_rows import rows_made_in_c
from kdissect.tables.repeats import REACH
from kdissect.tables.transactions import ABORT_MARKER, BROKER_LIST
from kdissect.testing.cluster import Connection, fetch, fetched, produced
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.records_encode import control_record, encode_batch, new_record
from tests.engines.spark_helpers import assert_same_tables, rotate, simulate, simulated_pieces

PRODUCER_ID, TXN = 7000, "tx-staging"


def _records(i: int) -> list:
    """A batch's records: compressible values, a null key now and then, headers (one with a null value)."""
    return [new_record(None if j % 7 == 0 else f"k{i}-{j}".encode(), f"event {i}-{j} of the round; ".encode() * 20,
                       [("trace", f"{i}.{j}".encode()), ("empty", None)], offset=j) for j in range(25)]  # fmt: skip


def compressed_capture(path: Path) -> str:
    """A producer writing batches of 25 records in every codec, every fourth batch in a transaction (every
    other transaction aborted: by its EndTxn, and, every fourth, by the broker's aborted list too), and a
    consumer fetching them back: the three plain batches before a transaction's in one answer, the
    transaction's batch and marker in the next (a message with a transactional batch is the reference's
    whole: ``_record_rows.c``)."""
    producer, consumer, coordinator = Connection(1, 41201), Connection(1, 41202), Connection(2, 41203)
    offset, plain, answers = 0, [], []  # (batches, the broker's aborted list) per answer
    for i in range(40):
        codec, txn, at = sorted(CODEC_NAMES)[i % len(CODEC_NAMES)], i % 4 == 3, 10.0 * i
        abort = txn and i % 8 == 3
        batch = encode_batch(_records(i), base_offset=offset, codec=codec, transactional=txn,
                             producer_id=PRODUCER_ID if txn else -1, producer_epoch=0 if txn else -1,
                             base_sequence=offset if txn else -1)  # fmt: skip
        request = {"transactional_id": TXN if txn else None, "acks": -1, "timeout_ms": 30000,
                   "topic_data": [{"name": "orders", "partition_data": [{"index": 0, "records": batch}]}]}
        producer.call(0, 9, request, produced("orders", 0, offset), at, 1, "p")
        if txn:
            coordinator.call(26, 3, {"transactional_id": TXN, "producer_id": PRODUCER_ID, "producer_epoch": 0,
                                     "committed": not abort}, {}, at + 2, 1, "p")  # fmt: skip
            listed = [{"producer_id": PRODUCER_ID, "first_offset": offset}] if abort and i % 16 == 3 else []
            offset += 25
            marker = encode_batch([control_record(0 if abort else 1)], base_offset=offset, transactional=True,
                                  control=True, producer_id=PRODUCER_ID, producer_epoch=0)  # fmt: skip
            answers += [(plain, []), ([batch, marker], listed)]
            plain, offset = [], offset + 1
        else:
            plain.append(batch)
            offset += 25
    for k, (batches, listed) in enumerate([*answers, (plain, [])]):
        answer = fetched("orders", 0, offset, b"".join(batches))
        answer["responses"][0]["partitions"][0]["aborted_transactions"] = listed
        consumer.call(1, 11, fetch("orders", 0, 0), answer, 500.0 + 10 * k, 1, "c")
    segments = sorted((s for c in (producer, consumer, coordinator) for s in c.segments()), key=lambda s: s.ts_ns)
    path.write_bytes(write_capture(segments))
    return str(path)


def local_run(paths: list[str], options: Options) -> dict[str, pa.Table]:
    run = local.analyze(paths, options)
    return {name: to_arrow(name, run.tables[name]) for name in TABLES}


@pytest.mark.parametrize("payloads", [None, Payloads(9), LENGTHS_ONLY], ids=["whole", "cut", "none"])
def test_records_of_compressed_and_transactional_batches_finish_as_the_local_engine_s(
        tmp_path: Path, payloads: Payloads | None) -> None:  # fmt: skip
    capture = compressed_capture(tmp_path / "records.pcap")
    options = Options() if payloads is None else Options(payloads=payloads)
    want = local_run([capture], options)
    records = want["records"]
    assert set(pc.unique(records["compression"].cast(pa.string())).to_pylist()) == set(CODEC_NAMES.values())
    assert pc.sum(records["aborted"]).as_py() and pc.sum(records["transactional"]).as_py()
    rules = pc.unique(records["aborted_by"].cast(pa.string())).drop_null().to_pylist()
    assert {BROKER_LIST, ABORT_MARKER} <= set(rules)
    assert_same_tables(simulate([capture], options=options), want)
    # rotated in three: the consumer's and the producer's connections cross the files (decode tasks)
    rotated = rotate(capture, tmp_path / "rotated", cuts=2)
    assert_same_tables(simulate(rotated, options=options), local_run(rotated, options))


def read_back_capture(path: Path, groups: int = 3) -> str:
    """A producer writing 24 batches (every codec, and none) of 20 records of 1,000 hardly compressible
    bytes (a null key now and then, headers), and ``groups`` consumers each fetching all of them back,
    four batches an answer: every payload four times on the wire, as on record-heavy traffic."""
    rng = random.Random(23)
    producer, consumers = Connection(1, 41301), [Connection(1, 41302 + g) for g in range(groups)]
    batches, offset = [], 0
    for i in range(24):
        records = [new_record(None if j % 9 == 0 else f"key-{i}-{j}".encode(), rng.randbytes(500).hex().encode(),
                              [("trace", rng.randbytes(8).hex().encode())], offset=j) for j in range(20)]  # fmt: skip
        batch = encode_batch(records, base_offset=offset, codec=i % 5)
        request = {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
                   "topic_data": [{"name": "orders", "partition_data": [{"index": 0, "records": batch}]}]}
        producer.call(0, 9, request, produced("orders", 0, offset), 10.0 * i, 1, "p")
        batches.append(batch)
        offset += 20
    for g, consumer in enumerate(consumers):
        for k in range(0, len(batches), 4):
            answer = fetched("orders", 0, offset, b"".join(batches[k : k + 4]))
            consumer.call(1, 11, fetch("orders", 0, 20 * k), answer, 500.0 + 100 * g + k, 1, f"c{g}")
    segments = sorted((s for c in (producer, *consumers) for s in c.segments()), key=lambda s: s.ts_ns)
    path.write_bytes(write_capture(segments))
    return str(path)


@pytest.mark.parametrize("payloads", [None, Payloads(9), LENGTHS_ONLY], ids=["whole", "cut", "none"])
def test_staged_records_hold_a_read_back_payload_once_and_finish_as_the_local_engine_s(
        tmp_path: Path, payloads: Payloads | None) -> None:  # fmt: skip
    """Staged on local disk, the rows of a batch read back by three consumers hold its keys, values and
    header values once: the consumers' rows refer to the producer's (tables/repeats.py); the tables
    are the local engine's, in one file (one task: the references hit) and rotated (decode tasks)."""
    capture = read_back_capture(tmp_path / "read-back.pcap")
    options = Options() if payloads is None else Options(payloads=payloads)
    want = local_run([capture], options)
    assert_same_tables(simulate([capture], options=options, staging=str(tmp_path / "one")), want)
    staged = sum(f.stat().st_size for f in (tmp_path / "one" / "records").iterdir())
    records = want["records"]
    assert records.num_rows == 4 * 24 * 20
    held = sum(pc.sum(pc.binary_length(records[c])).as_py() or 0 for c in ("key", "value"))
    if payloads is None and rows_made_in_c():  # a quarter of the payloads' bytes, and the rest of the rows
        assert held > 1_900_000 and staged < held / 2, (held, staged)
    rotated = rotate(capture, tmp_path / "rotated", cuts=2)
    assert_same_tables(simulate(rotated, options=options, staging=str(tmp_path / "rotated-staged")),
                       local_run(rotated, options))  # fmt: skip
    assert_same_tables(simulate(rotated, options=options), local_run(rotated, options))


def test_a_reference_reaches_back_a_bounded_number_of_rows(tmp_path: Path, monkeypatch) -> None:
    """Past ``REACH`` rows back, a payload met again is staged again (what the finishing task keeps in
    reach is bounded); the tables stay the local engine's."""
    if not rows_made_in_c():
        pytest.skip("references are made by the records rows in C (tables/_record_rows.c)")
    capture = read_back_capture(tmp_path / "read-back.pcap", groups=1)
    from kdissect.tables import repeats

    monkeypatch.setattr(repeats, "REACH", 100)  # (the consumer's rows come 480 rows after the producer's)
    assert REACH > 100_000
    assert_same_tables(simulate([capture], staging=str(tmp_path / "near")), local_run([capture], Options()))
    near = sum(f.stat().st_size for f in (tmp_path / "near" / "records").iterdir())
    monkeypatch.setattr(repeats, "REACH", REACH)
    simulate([capture], staging=str(tmp_path / "far"))
    assert near > 1.5 * sum(f.stat().st_size for f in (tmp_path / "far" / "records").iterdir())


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_every_plain_message_s_records_are_made_in_c(tmp_path: Path, monkeypatch, engine: str) -> None:
    """Only messages with a transactional or control batch are left to the reference: a piece's first
    message and those after a control batch's rows too are made in C (the records table stays steady),
    in a Spark task as in the local engine; the rows are the local engine's (above)."""
    capture = compressed_capture(tmp_path / "records.pcap")
    by_reference: list[bool] = []  # per message the reference decoded: whether a batch of it is not plain
    decode = sink.record_fields

    def record_fields(located: list, *args: object) -> list:
        if located:
            by_reference.append(any(_special(raw) for *_, raw, _ in located))
        return decode(located, *args)

    monkeypatch.setattr(sink, "record_fields", record_fields)
    options = Options(spill_rows=60)  # (pieces of a few batches each)
    if engine == "spark":
        simulated_pieces([capture], options=options)
    else:
        local.analyze([capture], options)
    assert by_reference and all(by_reference)


def _special(raw: bytes) -> bool:
    """Whether a records field holds a transactional or control batch."""
    at = 0
    while at + 61 <= len(raw):
        if raw[at + 22] & 0x30:  # (the attributes' low byte)
            return True
        at += 12 + int.from_bytes(raw[at + 8 : at + 12], "big")
    return False


def test_a_worker_s_tasks_inflate_a_payload_once_whichever_task_meets_it(tmp_path: Path, monkeypatch) -> None:
    """A worker runs its tasks one after another: a compressed batch decoded in one task is not inflated
    again in the next (the local engine's run-wide cache does the same across its files), and the
    tables are still the local engine's."""
    from kdissect.decoders import inflate_cache
    from kdissect.engines import partition

    capture = read_back_capture(tmp_path / "read-back.pcap")
    want = local_run([capture], Options())
    inflations: list[int] = []
    real = inflate_cache.decompress

    def counted(codec: int, payload: bytes, limit: int, legacy_lz4: bool = False) -> object:
        inflations.append(len(payload))
        return real(codec, payload, limit, legacy_lz4=legacy_lz4)

    monkeypatch.setattr(inflate_cache, "decompress", counted)
    partition._kept_inflations.cache_clear()  # (earlier tests' tasks inflated these very batches)
    simulate([capture])
    first = len(inflations)
    assert first >= 19  # the 24 batches but the five uncompressed, each inflated once though fetched three times
    assert_same_tables(simulate([capture]), want)
    assert len(inflations) == first
