"""The Spark engine in local mode against the local engine: the same tables (rows, values and
Parquet types), the same summary figures, rotated and byte-range-split captures decoding as the
unsplit file, and bad files reported without failing the job. One SparkSession for the module."""

from __future__ import annotations

import ipaddress
import json
import pickle
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kdissect.engines.request import Request, run
from kdissect.engines.run import report_figures
from kdissect.engines.spark import Decoded, decode, report_of, spark_schema
from kdissect.engines.spark_session import session
from kdissect.options import LENGTHS_ONLY, Options
from kdissect.report.build import write_report
from kdissect.spark import read_captures
from kdissect.tables import merge, transactions
from kdissect.tables.columns import TABLES
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.synthetic import conversation, with_payload, write
from tests.conftest import require_tool
from tests.engines.spark_helpers import (
    REAL_CAPTURES,
    assert_same_tables,
    interleaved_rotations,
    local_tables,
    read_parquet_dir,
    record_ends,
    rotate,
    rows,
    transactions_at_two_places,
)

UI_PORT, DRIVER_PORT = 19740, 19741  # this test's range (Spark moves on to the next free port if taken)
JVM_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector"
TLS_CAPTURES = Path(REAL_CAPTURES[0]).parent / "tls"  # real TLS captures with their key logs


@pytest.fixture(scope="module")
def spark() -> Iterator:
    require_tool("java")
    s = session("local[2]", {"spark.ui.enabled": "true", "spark.ui.port": str(UI_PORT),
                             "spark.driver.port": str(DRIVER_PORT)})  # fmt: skip
    yield s
    s.stop()


def listening_on(port: int) -> set[str]:
    """The addresses TCP sockets listen on at ``port`` (``/proc/net/tcp{,6}``; IPv4-mapped IPv6 addresses
    as IPv4; 0.0.0.0 or ``::``: every interface)."""
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, at = local.split(":")
            if state != "0A" or int(at, 16) != port:  # 0A: LISTEN
                continue
            raw = b"".join(bytes.fromhex(address[i : i + 8])[::-1] for i in range(0, len(address), 8))
            ip = ipaddress.ip_address(raw)
            found.add(str(getattr(ip, "ipv4_mapped", None) or ip))
    return found


def test_spark_s_services_listen_on_loopback_only_and_settings_given_win(spark) -> None:
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.ui.enabled") == "true"  # a setting given (the CLI's --conf) won over the default
    ui_port = int(spark.sparkContext.uiWebUrl.rsplit(":", 1)[1])
    driver_port = int(conf.get("spark.driver.port"))
    assert UI_PORT <= ui_port < UI_PORT + 17 and DRIVER_PORT <= driver_port < DRIVER_PORT + 17
    assert listening_on(ui_port) == {"127.0.0.1"} and listening_on(driver_port) == {"127.0.0.1"}


def written(decoded: Decoded, out: Path) -> dict:
    decoded.write(str(out), TABLES)
    return {name: read_parquet_dir(out / name) for name in TABLES}


def assert_as_locally(spark, out: Path, paths: list[str], want: dict, figures, **decode_kw) -> None:
    """Spark's tables (written under ``out``) and summary for ``paths`` are the local engine's."""
    decoded = decode(spark, paths, partitions=2, **decode_kw)
    try:
        assert_same_tables(written(decoded, out), want)
        assert decoded.summary() == figures
    finally:
        decoded.close()


def damaged_captures(tmp: Path) -> list[str]:
    """Synthetic captures damaged the ways real ones are: cut mid-packet, a corrupt pcapng block,
    snap-length cuts, flipped payload bytes, and a TLS-looking stream on the Kafka port."""
    segs = conversation(4, client_port=41000)
    cut = tmp / "cut.pcap"
    cut.write_bytes(write_capture(segs)[: len(write_capture(segs[:20])) + 30])
    data = bytearray(write_capture(conversation(4, client_port=42000), fmt="pcapng"))
    at = 0
    for _ in range(6):  # the sixth block: a packet's
        at += int.from_bytes(data[at + 4 : at + 8], "little")
    data[at + 4 : at + 8] = (0x7FFF_FFF0).to_bytes(4, "little")  # a block length no reader can honour
    corrupt = tmp / "corrupt.pcapng"
    corrupt.write_bytes(bytes(data))
    snap = write(tmp / "snap.pcap", conversation(4, client_port=43000), snaplen=300)
    rng = random.Random(7)
    flipped = list(conversation(4, client_port=44000))
    for k in rng.sample([i for i, s in enumerate(flipped) if s.payload], 3):
        payload = bytearray(flipped[k].payload)
        payload[rng.randrange(len(payload))] ^= 0x5A
        flipped[k] = with_payload(flipped[k], bytes(payload))
    flips = write(tmp / "flips.pcap", flipped)
    tls = conversation(2, client_port=45000)
    tls = [with_payload(s, b"\x16\x03\x01" + s.payload[3:]) if s.payload else s for s in tls]
    return [str(cut), str(corrupt), str(snap), str(flips), str(write(tmp / "tls.pcap", tls))]


def test_every_real_capture_gives_the_local_engine_s_tables_and_figures(spark, tmp_path: Path) -> None:
    want, figures = local_tables(REAL_CAPTURES)
    # Every table has rows here, each naming its capture file, so the comparison below covers them all.
    assert all(want[name].num_rows and not want[name]["source_file"].null_count for name in TABLES)
    # Pieces staged in files here (as the command line does in local mode); the other tests keep them inline.
    decoded = decode(spark, REAL_CAPTURES, partitions=3, staging=str(tmp_path / "staging"))
    try:
        # one file per task that decoded records: of the 3 decode tasks, and of the read tasks of units
        # whose own connections (here, most: a capture's connections lie in it alone) carried records
        staged = {p.name for p in (tmp_path / "staging" / "records").glob("*.arrows")}
        assert all(re.fullmatch(r"(task-0000[0-2]|unit-\d{5})-0\.arrows", name) for name in staged)
        assert any(name.startswith("unit-") for name in staged)
        assert_same_tables(written(decoded, tmp_path / "out"), want)
        assert decoded.summary() == figures
        frames = {name: decoded.table(name) for name in ("exchanges", "records")}
        for name, frame in frames.items():
            assert frame.schema == spark_schema(name) and frame.count() == want[name].num_rows
    finally:
        decoded.close()


def test_a_local_run_compiles_no_generated_code_and_keeps_nothing_after_it(spark, tmp_path: Path) -> None:
    """Local mode: Catalyst interprets (``spark_session.LOCAL_SQL``) and the decoded pieces are kept as
    a local checkpoint (``spark.kept``), not in Spark's cache, whose reader is generated code: Janino is
    never run (its cold start was one of the JVM's largest costs in a small run). Closing the run drops
    the checkpoint's rows. And spark-mllib's session extension, found on the class path, was not started."""
    jvm = spark.sparkContext._jvm
    functions = getattr(getattr(jvm.org.apache.spark.sql.catalyst.analysis, "FunctionRegistry$"), "MODULE$")
    assert not functions.internal().functionExists(jvm.org.apache.spark.sql.catalyst.FunctionIdentifier.apply(
        "vector_to_array"))  # fmt: skip
    compiled = jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    before, kept_before = compiled.getCount(), spark.sparkContext._jsc.sc().getPersistentRDDs().size()
    decoded = decode(spark, REAL_CAPTURES[:2], staging=str(tmp_path / "staging"))
    try:
        decoded.write(str(tmp_path / "out"), TABLES)
        assert decoded.summary().exchanges
        assert spark.sparkContext._jsc.sc().getPersistentRDDs().size() == kept_before + 1
    finally:
        decoded.close()
    assert compiled.getCount() == before
    assert spark.sparkContext._jsc.sc().getPersistentRDDs().size() == kept_before


def test_damaged_synthetic_captures_match_the_local_engine(spark, tmp_path: Path) -> None:
    paths = damaged_captures(tmp_path)
    want, figures = local_tables(paths)
    assert {"truncated_file", "corrupt_record", "gap", "tls_no_key"} <= set(want["anomalies"]["kind"].to_pylist())
    assert_as_locally(spark, tmp_path / "out", paths, want, figures)


def test_rotated_files_and_byte_ranges_decode_as_the_unsplit_capture(spark, tmp_path: Path) -> None:
    capture = next(p for p in REAL_CAPTURES if p.endswith("librdkafka-produce-consume.pcap"))
    pcapng = next(p for p in REAL_CAPTURES if p.endswith(".pcapng"))
    files = rotate(capture, tmp_path / "rotated", cuts=7, seed=3)
    for paths, split, whole in ((files, 1 << 30, capture), ([capture], 4000, capture), ([pcapng], 4000, pcapng)):
        want, _ = local_tables([whole])
        decoded = decode(spark, paths, split_bytes=split, partitions=3)
        try:
            got = written(decoded, tmp_path / f"out{split}")
        finally:
            decoded.close()
        for name in TABLES:
            assert rows(got[name], ("source_file",)) == rows(want[name], ("source_file",)), name


def production_shapes(capture: str, out: Path) -> dict[str, list[str]]:
    """The shapes real capture sets take, made from a real capture (classic pcap): cut at both ends
    (begun mid-conversation, ended mid-record), rotated files given out of order, and rotated files
    that overlap (a record range in two files, as when two capture processes ran at once)."""
    data = Path(capture).read_bytes()
    ends = record_ends(data)
    out.mkdir()
    cut = out / "cut.pcap"
    cut.write_bytes(data[:24] + data[ends[len(ends) // 5] : ends[-len(ends) // 5] + 9])
    rotated = rotate(capture, out / "rotated", cuts=5, seed=11)
    third, two_thirds = ends[len(ends) // 3], ends[2 * len(ends) // 3]
    overlapping = [out / "first.pcap", out / "second.pcap"]
    overlapping[0].write_bytes(data[:two_thirds])
    overlapping[1].write_bytes(data[:24] + data[third:])
    return {"cut": [str(cut)], "rotated out of order": [rotated[i] for i in (3, 0, 5, 1, 4, 2)],
            "overlapping": [str(p) for p in overlapping]}  # fmt: skip


@pytest.mark.parametrize("name", ["librdkafka-produce-consume.pcap", "librdkafka-transactions.pcap"])
def test_production_shapes_give_the_local_engine_s_tables_and_figures(spark, tmp_path: Path, name: str) -> None:
    capture = next(p for p in REAL_CAPTURES if p.endswith(name))
    for shape, paths in production_shapes(capture, tmp_path / "shapes").items():
        want, figures = local_tables(paths)
        decoded = decode(spark, paths, partitions=3)
        try:
            got = written(decoded, tmp_path / shape)
            summary = decoded.summary()
        finally:
            decoded.close()
        assert want["exchanges"].num_rows and summary == figures, shape
        assert_same_tables(got, want)


def test_a_capture_read_with_a_copy_of_part_of_it_gives_the_local_engine_s_tables(spark, tmp_path: Path) -> None:
    """The copy's packets are dropped once, in each task as in the local engine (segments merged by time)."""
    capture = next(p for p in REAL_CAPTURES if p.endswith("librdkafka-produce-consume.pcap"))
    data = Path(capture).read_bytes()
    ends = record_ends(data)
    copy = tmp_path / "copy.pcap"
    copy.write_bytes(data[:24] + data[ends[len(ends) // 3] : ends[2 * len(ends) // 3]])
    paths = [str(copy), capture]
    want, figures = local_tables(paths)
    assert "duplicate_packets" in want["anomalies"]["kind"].to_pylist()
    decoded = decode(spark, paths, partitions=3)
    try:
        assert_same_tables(written(decoded, tmp_path / "out"), want)
        assert decoded.summary() == figures
    finally:
        decoded.close()


def test_bad_files_are_reported_by_name_and_the_rest_is_analysed(spark, tmp_path: Path) -> None:
    good = next(p for p in REAL_CAPTURES if "kafka-python-admin" in p)
    junk = tmp_path / "notes.txt"
    junk.write_text("not a capture at all\n")
    missing = str(tmp_path / "gone.pcap")  # as a remote file that vanished: the job goes on
    decoded = decode(spark, [str(junk), good, missing])
    try:
        assert [path for path, _ in decoded.unreadable] == [str(junk), missing]
        assert "not a pcap" in decoded.unreadable[0][1] and decoded.unreadable[1][1].startswith("cannot read")
        got = written(decoded, tmp_path / "out")
        summary = decoded.summary()
    finally:
        decoded.close()
    want, local_summary = local_tables([str(junk), good])  # the local engine skips the junk file the same way
    gone = pc.equal(got["anomalies"]["source_file"].cast(pa.string()), missing).fill_null(False)
    assert got["anomalies"].filter(gone)["kind"].to_pylist() == ["unreadable_file"]
    got["anomalies"] = got["anomalies"].filter(pc.invert(gone))
    assert_same_tables(got, want)
    assert (summary.apis, summary.errors, summary.exchanges) == (
        local_summary.apis, local_summary.errors, local_summary.exchanges
    )


def test_parquet_reads_back_in_pandas_duckdb_and_spark_with_the_local_types(spark, tmp_path: Path) -> None:
    from kdissect.cli import main

    capture = next(p for p in REAL_CAPTURES if p.endswith("librdkafka-transactions.pcap"))
    assert main(["analyze", capture, "--out", str(tmp_path / "local")]) == 0
    decoded = decode(spark, [capture])
    try:
        decoded.write(str(tmp_path / "spark"), TABLES)
    finally:
        decoded.close()
    for name in TABLES:
        local_file, spark_dir = tmp_path / "local" / f"{name}.parquet", tmp_path / "spark" / name
        assert pq.read_schema(local_file).remove_metadata() == read_parquet_dir(spark_dir).schema.remove_metadata()
        mine, theirs = pd.read_parquet(spark_dir), pd.read_parquet(local_file)
        assert mine.dtypes.to_dict() == theirs.dtypes.to_dict(), name
        count = duckdb.sql(f"select count(*) from read_parquet('{spark_dir}/*.parquet')").fetchall()[0][0]
        assert count == len(theirs), name
    spark.conf.set("spark.sql.legacy.parquet.nanosAsLong", "true")  # Spark has no nanosecond timestamps
    assert spark.read.parquet(str(tmp_path / "spark" / "exchanges")).count() == len(
        pd.read_parquet(tmp_path / "local" / "exchanges.parquet")
    )


def test_read_captures_gives_every_table_as_a_dataframe(spark) -> None:
    capture = next(p for p in REAL_CAPTURES if "kafka-python-admin" in p)
    frames = read_captures(spark, capture)
    want, _ = local_tables([capture])
    assert set(frames) == set(TABLES)
    for name, frame in frames.items():
        assert frame.schema == spark_schema(name) and frame.count() == want[name].num_rows, name
    got = frames["exchanges"].select("connection_id", "correlation_id", "api_name").collect()
    assert sorted(map(tuple, got)) == sorted(
        zip(*(want["exchanges"][c].to_pylist() for c in ("connection_id", "correlation_id", "api_name")), strict=True)
    )


def test_a_directory_stands_for_its_capture_files_only(spark, tmp_path: Path) -> None:
    """As with the local engine: the README, JSON and scripts beside the captures are not read."""
    capture = Path(next(p for p in REAL_CAPTURES if "kafka-python-admin" in p))
    (tmp_path / capture.name).write_bytes(capture.read_bytes())
    for name in ("README.md", "kafka-python-admin.truth.json", "make_captures.py"):
        (tmp_path / name).write_text("not a capture\n")
    decoded = decode(spark, [str(tmp_path)])
    try:
        assert decoded.files == [str(tmp_path / capture.name)] and decoded.unreadable == []
        assert decoded.summary() == local_tables([str(capture)])[1]
    finally:
        decoded.close()


def reports(paths: list[str], out: Path) -> tuple[bytes, bytes]:
    """``kdissect report`` of ``paths`` by the local engine and by ``--engine spark`` (its own session,
    so in a subprocess), as written."""
    from kdissect.cli import main

    assert main(["report", *paths, "-o", str(out / "local.json")]) == 0
    on_spark = subprocess.run([sys.executable, "-m", "kdissect.cli", "report", *paths, "-o",
                               str(out / "spark.json"), "--engine", "spark", "--master", "local[2]"],
                              capture_output=True, text=True, timeout=600)  # fmt: skip
    assert on_spark.returncode == 0, on_spark.stderr[-3000:]
    # Quiet by default (-v shows it): no log4j warnings, progress bars or PySpark's pandas warning. The
    # JVM's own notice of the incubator module Spark loads is printed before any setting applies.
    assert [line for line in on_spark.stderr.splitlines() if line != JVM_NOTICE] == [], on_spark.stderr[-3000:]
    return (out / "local.json").read_bytes(), (out / "spark.json").read_bytes()


def test_the_report_on_spark_is_the_local_engine_s_report(tmp_path: Path) -> None:
    local_report, spark_report = reports(REAL_CAPTURES, tmp_path)
    assert json.loads(local_report)["sections"] and json.loads(spark_report) == json.loads(local_report)


def test_rotated_files_that_interleave_in_time_give_the_local_tables_and_report(spark, tmp_path: Path) -> None:
    """Connections numbered in time order across rotated files (as the local engine meets them): the
    tables, the summary and the report (its slowest requests and anomalies name connections) are the
    local engine's."""
    files = interleaved_rotations(tmp_path / "captures")
    want, figures = local_tables(files)
    assert_as_locally(spark, tmp_path / "out", files, want, figures)
    local_report, spark_report = reports(files, tmp_path)
    assert b"connection_id" in local_report and spark_report == local_report


# A report run with the given options as the command line runs it, on Spark in a process of its own.
_SPARK_REPORT = """
import pickle, sys
from pathlib import Path
from kdissect.engines.request import Request, SparkSettings, run
from kdissect.report.build import format_for, write_report
paths, options, out = pickle.loads(bytes.fromhex(sys.argv[1]))
result = run(Request(paths, options, report=True, spark=SparkSettings("local[2]", verbose=False)))
write_report(result.frames, result.summary, result.inputs, Path(out), format_for(Path(out), None), result.figures)
"""


def reports_with(paths: list[str], options: Options, out: Path) -> tuple[bytes, bytes]:
    """The JSON reports of ``paths`` with ``options`` by the local engine and on Spark, as written."""
    options = replace(options, payloads=LENGTHS_ONLY)  # as the command line's report
    result = run(Request(paths, options, report=True))
    write_report(result.frames, result.summary, result.inputs, out / "local.json", "json", result.figures)
    argument = pickle.dumps((paths, options, str(out / "spark.json"))).hex()
    on_spark = subprocess.run([sys.executable, "-c", _SPARK_REPORT, argument], capture_output=True, text=True,
                              timeout=600)  # fmt: skip
    assert on_spark.returncode == 0, on_spark.stderr[-3000:]
    return (out / "local.json").read_bytes(), (out / "spark.json").read_bytes()


@pytest.mark.parametrize("limits", [(None, None), (500, 300)], ids=["below", "past"])
def test_topic_ids_and_transactions_across_interleaved_rotations_give_the_local_tables_and_report(
        spark, tmp_path: Path, limits: tuple) -> None:  # fmt: skip
    """Two captures of 700 transactions (Fetch v13 answers naming topics by id, EndTxn calls and
    markers on other connections than the records), rotated at different times: Spark's tables are the
    local engine's, and its report is byte for byte the local report below the journal's limits and
    past them (500 records, 300 events: ``not kept`` rows and the true totals), each task keeping its
    own bounded journal."""
    files = transactions_at_two_places(tmp_path / "captures", 700)
    records, events = limits
    if records is None:
        want, figures = local_tables(files)
        assert_as_locally(spark, tmp_path / "out", files, want, figures)
    options = Options() if records is None else Options(journal_records=records, journal_events=events)
    local_report, spark_report = reports_with(files, options, tmp_path)
    assert (b"not kept" in local_report) == (records is not None) and b"zeta-audit" in local_report
    assert spark_report == local_report


def _not_on_the_driver(*args: object, **kwargs: object) -> None:
    raise AssertionError("the transaction journal was replayed on the driver")


def test_aborted_marks_stay_with_the_tasks_whatever_the_number_of_transactions(spark, tmp_path: Path,
                                                                               monkeypatch) -> None:  # fmt: skip
    """``analyze --out`` on Spark, its pieces staged as the command line stages them: the journal is
    replayed in a task (never on the driver) and the aborted marks are staged for the tasks writing
    the records, so what the driver holds to finish the tables is the same for 30 and 300
    transactions (it held every mark: 100 more); the records are the local engine's, marked by both
    rules."""
    monkeypatch.setattr(transactions, "settled_marks", _not_on_the_driver)  # (Spark's workers: other processes)
    held = []
    for n in (30, 300):
        files = transactions_at_two_places(tmp_path / f"captures{n:03d}", n)
        want, _ = local_tables(files)
        decoded = decode(spark, files, partitions=2, staging=str(tmp_path / f"staging{n:03d}"))
        try:
            got = written(decoded, tmp_path / f"out{n:03d}")
            held.append(len(pickle.dumps(decoded.settled)))
        finally:
            decoded.close()
        assert_same_tables(got, want)
        aborted = want["records"].filter(pc.equal(want["records"]["aborted"], True))
        rules = set(aborted["aborted_by"].to_pylist())
        assert aborted.num_rows >= 2 * (n // 3) and rules == {"abort_marker", "end_txn"}
    assert abs(held[1] - held[0]) <= 16, held


def test_a_report_with_no_staging_directory_gathers_no_journal_on_the_driver(spark, tmp_path: Path,
                                                                             monkeypatch) -> None:  # fmt: skip
    """The report on a cluster with no staging directory (the pieces inline, in Spark's cache): the
    tasks' journal pieces are sorted and replayed on Spark, none of them is collected by the driver,
    and the report is the local engine's byte for byte."""
    files = transactions_at_two_places(tmp_path / "captures", 120)
    options = replace(Options(), payloads=LENGTHS_ONLY)
    local = run(Request(files, options, report=True))
    write_report(local.frames, local.summary, local.inputs, tmp_path / "local.json", "json", local.figures)
    collected: list = []
    frames = type(spark.range(1))  # (the session's own DataFrame class)
    collect = frames.collect

    def collecting(frame: object) -> list:
        got = collect(frame)
        collected.extend(row.asDict() for row in got)
        return got

    monkeypatch.setattr(frames, "collect", collecting)
    monkeypatch.setattr(transactions, "settled_marks", _not_on_the_driver)
    decoded = decode(spark, files, options=options, staging=None, figures=partial(report_figures, options),
                     records_read=False)  # fmt: skip
    try:
        result = report_of(decoded)
    finally:
        decoded.close()
    write_report(result.frames, result.summary, local.inputs, tmp_path / "spark.json", "json", result.figures)
    assert any(row.get("table") == merge.JOURNAL for row in collected)  # (the driver learns that there is one)
    assert [row for row in collected if row.get("table") == merge.JOURNAL and row.get("data") is not None] == []
    assert b"abort" in (tmp_path / "local.json").read_bytes()
    assert (tmp_path / "spark.json").read_bytes() == (tmp_path / "local.json").read_bytes()


def test_tls_decrypts_in_the_tasks_with_the_key_log_shipped(spark, tmp_path: Path) -> None:
    """--tls-keylog on Spark: the key material travels to the tasks with the options, and the
    decrypted tables and figures are the local engine's."""
    from kdissect.options import Options
    from kdissect.tls.keylog import KeyLog

    names = ("kafka-python-tls13-aesgcm", "kafka-python-tls12-cbc")
    paths = [str(TLS_CAPTURES / f"{n}.pcap") for n in names]
    options = Options(tls_keylog=KeyLog(b"".join((TLS_CAPTURES / f"{n}.keys.log").read_bytes() for n in names)))
    assert_decrypted_as_locally(spark, tmp_path, paths, options)


def test_tls_decrypts_with_the_captures_own_decryption_secrets_blocks(spark, tmp_path: Path) -> None:
    """pcapng files carrying their key logs (``editcap --inject-secrets``), no --tls-keylog: the read
    tasks hand the blocks to the driver, the decode tasks get them, and tables and figures are the
    local engine's, every connection decrypted."""
    from kdissect.options import Options

    require_tool("editcap")
    paths = []
    for name in ("kafka-python-tls13-aesgcm", "kafka-python-tls12-cbc"):
        out = tmp_path / f"{name}.pcapng"
        keys, capture = TLS_CAPTURES / f"{name}.keys.log", TLS_CAPTURES / f"{name}.pcap"
        subprocess.run(["editcap", "--inject-secrets", f"tls,{keys}", str(capture), str(out)], check=True,
                       capture_output=True)  # fmt: skip
        paths.append(str(out))
    assert_decrypted_as_locally(spark, tmp_path, paths, Options())


def assert_decrypted_as_locally(spark, tmp_path: Path, paths: list[str], options) -> None:
    """Spark's tables and summary for ``paths`` are the local engine's, and every connection (8) decrypted."""
    from kdissect.engines import local
    from kdissect.tables.arrow import to_arrow

    run = local.analyze(paths, options)
    want = {name: to_arrow(name, run.tables[name]) for name in TABLES}
    assert set(want["connections"]["decryption"].to_pylist()) == {"handshake"}
    assert run.summary.decrypted_connections == 8
    assert_as_locally(spark, tmp_path / "out", paths, want, run.summary, options=options)
