"""A first run without surprises: option values checked up front, exit statuses defined once
(0 read, 1 nothing readable, 2 usage), directories and bad files among good ones, table files
consistent across formats, and a way from a capture to ``kdissect decode @FILE``."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import kdissect
from kdissect.tables.columns import TABLES
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.kafka_frames import metadata_request, metadata_response
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.synthetic import T0, conversation, write

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
NS = 123_456_789  # a fraction of a second no microsecond clock gives


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    """Two Metadata round trips with nanosecond timestamps, broker on 9092."""
    msgs = [
        (0, metadata_request(1), T0 + NS),
        (1, metadata_response(1), T0 + NS + 1000),
        (0, metadata_request(2), T0 + 2 * NS),
        (1, metadata_response(2), T0 + 2 * NS + 1000),
    ]
    path = tmp_path / "ns.pcapng"
    path.write_bytes(write_capture(tcp_conversation(msgs), fmt="pcapng", nanosecond=True))
    return path


@pytest.mark.parametrize("ports", ["abc", "9092,abc", "70000", "0", "9092,,9093"])
def test_bad_ports_are_a_one_line_usage_error(capture: Path, ports: str) -> None:
    out = cli("analyze", str(capture), "--ports", ports)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "--ports" in out.stderr, out.stderr


def test_format_or_tables_without_out_are_refused(capture: Path) -> None:
    for extra in (["--format", "csv"], ["--tables", "exchanges"]):
        out = cli("analyze", str(capture), *extra)
        assert out.returncode == 2 and "--out" in out.stderr and out.stderr.count("\n") == 1


def test_a_damaged_gzip_names_the_damage(tmp_path: Path, capture: Path) -> None:
    data = bytearray(gzip.compress(capture.read_bytes()))
    data[12:20] = b"\xff" * 8
    bad = tmp_path / "bad.pcapng.gz"
    bad.write_bytes(bytes(data))
    out = cli("analyze", str(bad))
    assert out.returncode == 1 and "gzip" in out.stderr and "empty capture file" not in out.stderr.split(";")[0]


def test_a_directory_means_the_capture_files_in_it(tmp_path: Path) -> None:
    folder = tmp_path / "caps"
    folder.mkdir()
    write(folder / "a.pcap", conversation(2))
    write(folder / "b.pcap", conversation(3, client_port=40001))
    (folder / "notes.txt").write_text("not a capture")
    out = cli("analyze", str(folder))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{len(conversation(2)) + len(conversation(3))} packets")
    empty = tmp_path / "nothing"
    empty.mkdir()
    out = cli("analyze", str(empty))
    assert out.returncode == 2 and "is a directory" in out.stderr


def test_one_bad_file_among_good_ones_is_named_and_the_others_analysed(tmp_path: Path, capture: Path) -> None:
    empty, text = tmp_path / "empty.pcap", tmp_path / "notes.pcap"
    empty.write_bytes(b"")
    text.write_text("hello, this is not a capture\n")
    out = cli("analyze", str(empty), str(capture), str(text))
    assert out.returncode == 0, out.stderr
    assert "2 exchanges" in out.stdout.splitlines()[0]
    assert [line.split(":")[1].removeprefix(" skipped ") for line in out.stderr.splitlines()] == [str(empty), str(text)]


def test_exit_statuses(tmp_path: Path, capture: Path) -> None:
    """0: read (even if it held no Kafka); 1: nothing readable; 2: usage."""
    short = tmp_path / "short.pcapng"
    short.write_bytes(capture.read_bytes()[:30])
    empty = tmp_path / "e.pcap"
    empty.write_bytes(b"")
    assert cli("analyze", str(capture)).returncode == 0
    assert cli("analyze", str(short)).returncode == 1
    assert cli("analyze", str(empty)).returncode == 1
    assert cli("analyze", str(tmp_path / "missing.pcap")).returncode == 2
    assert cli("decode", "00ff").returncode == 1
    assert "exit status: 0" in cli("analyze", "--help").stdout


def test_text_formats_keep_nanoseconds_and_empty_tables_are_valid_files(tmp_path: Path, capture: Path) -> None:
    for fmt in ("jsonl", "csv", "parquet"):
        out = cli("analyze", str(capture), "--out", str(tmp_path / fmt), "--format", fmt)
        assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in (tmp_path / "jsonl" / "exchanges.jsonl").read_text().splitlines()]
    assert rows[0]["request_ts"].endswith(f".{NS:09d}Z")
    assert pd.read_csv(tmp_path / "csv" / "exchanges.csv")["request_ts"][0].endswith(f".{NS:09d}Z")
    parquet = pd.read_parquet(tmp_path / "parquet" / "exchanges.parquet")
    assert parquet["request_ts"][0].nanosecond == NS % 1000
    # no anomaly, no record: empty files, each valid in its format
    assert (tmp_path / "jsonl" / "records.jsonl").read_bytes() == b""
    assert (tmp_path / "csv" / "records.csv").read_text().splitlines() == [",".join(n for n, _ in TABLES["records"])]
    assert list(pd.read_parquet(tmp_path / "parquet" / "records.parquet").columns)[:3] == [
        "connection_id",
        "correlation_id",
        "direction",
    ]


def test_no_payloads_writes_null_in_every_format(tmp_path: Path) -> None:
    cap = CAPTURES / "librdkafka-produce-consume.pcap"
    for fmt in ("jsonl", "csv", "parquet"):
        out = cli(
            "analyze", str(cap), "--out", str(tmp_path / fmt), "--format", fmt, "--tables", "records", "--no-payloads"
        )
        assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in (tmp_path / "jsonl" / "records.jsonl").read_text().splitlines()]
    assert rows and all(r["value"] is None and r["value_size"] is not None for r in rows)
    assert pd.read_csv(tmp_path / "csv" / "records.csv")["value"].isna().all()
    assert pd.read_parquet(tmp_path / "parquet" / "records.parquet")["value"].isna().all()


def test_show_json_times_are_iso_strings_like_the_tables(capture: Path) -> None:
    first = json.loads(cli("show", str(capture), "--json").stdout.splitlines()[0])
    assert first["request_ts"].endswith(f".{NS:09d}Z") and first["request"]["ts_first"] == first["request_ts"]


def test_show_text_of_a_cut_request_prints_its_header_and_leading_fields() -> None:
    out = cli("show", str(CAPTURES / "librdkafka-snaplen200.pcap"), "--filter", 'api_name == "Produce"')
    block = out.stdout.split("=== conn")[1]
    assert "only" in block and "client_id:" in block and "acks:" in block


def test_decode_of_response_bytes_without_api_key_hints_at_a_response() -> None:
    frame = metadata_response(7).hex()
    out = cli("decode", frame)
    assert out.returncode == 1 and "--api-key" in out.stderr and out.stderr.count("\n") == 1


def test_save_frames_then_decode_at_file(tmp_path: Path, capture: Path) -> None:
    out = cli("show", str(capture), "--filter", "correlation_id == 2", "--save-frames", str(tmp_path / "f"))
    assert out.returncode == 0, out.stderr
    files = sorted(p.name for p in (tmp_path / "f").iterdir())
    assert files == ["c0-2-Metadata-v9-request.bin", "c0-2-Metadata-v9-response.bin"]
    req = cli("decode", f"@{tmp_path / 'f' / 'c0-2-Metadata-v9-request.bin'}", "--json")
    assert json.loads(req.stdout)["header"]["correlation_id"] == 2
    response = f"@{tmp_path / 'f' / 'c0-2-Metadata-v9-response.bin'}"
    hint = cli("decode", response)  # the file name says what the response needs
    assert hint.returncode == 1 and hint.stderr.strip().endswith("add --api-key 3 --api-version 9"), hint.stderr
    resp = cli("decode", response, "--api-key", "3", "--api-version", "9")
    assert resp.returncode == 0 and "broker-1" in resp.stdout
    raw = cli("show", str(capture), "--filter", "correlation_id == 2", "--raw").stdout
    assert f"raw: {metadata_request(2).hex()}" in raw


def test_filters_on_topic_and_time_window(capture: Path) -> None:
    shown = cli("show", str(capture), "--filter", '"orders" in topics', "--json").stdout.splitlines()
    assert len(shown) == 2
    assert cli("show", str(capture), "--filter", '"payments" in topics').stdout.strip() == "no matching Kafka exchanges"
    start = json.loads(shown[1])["request_ts"]
    window = f'request_ts >= "{start}" and request_ts < "2100-01-01"'
    assert [
        json.loads(line)["correlation_id"]
        for line in cli("show", str(capture), "--filter", window, "--json").stdout.splitlines()
    ] == [2]


def test_help_gives_every_option_a_text_and_its_default() -> None:
    for command in ("analyze", "show", "decode", "report", "live"):
        section = cli(command, "--help").stdout.split("options:")[1].split("\n\n")[0]
        described: dict[str, str] = {}
        for line in section.splitlines():
            if line.startswith("  -"):
                option = line.split()[0].rstrip(",")
                described[option] = line
            elif line.strip():
                described[option] += line
        del described["-h"]
        assert described, command
        for option, text in described.items():
            assert "default" in text.lower() or option == "--api-version", (command, option, text)
    analyze = " ".join(cli("analyze", "--help").stdout.split())
    assert all(name in analyze for name in TABLES)
    show = cli("show", "--help").stdout
    assert "topics" in show and "request_ts >=" in show and "operators" in show


def test_open_capture_of_a_missing_file_fails_at_once(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        kdissect.open_capture(tmp_path / "nonexistent.pcap")


def test_no_auto_detect_in_the_cli_and_the_library(tmp_path: Path) -> None:
    """A broker on 31337: found by auto-detection, ignored without it (unless --ports names it)."""
    path = write(tmp_path / "c.pcap", conversation(3, port=31337))
    assert "6 exchanges" in cli("analyze", str(path)).stdout.splitlines()[0]
    assert "0 exchanges" in cli("analyze", str(path), "--no-auto-detect").stdout.splitlines()[0]
    assert "6 exchanges" in cli("analyze", str(path), "--no-auto-detect", "--ports", "31337").stdout.splitlines()[0]
    assert len(kdissect.open_capture(path).exchanges) == 6
    assert len(kdissect.open_capture(path, auto_detect=False).exchanges) == 0


def test_a_large_input_gets_one_line_suggesting_the_spark_engine(monkeypatch, capsys) -> None:
    from kdissect.cli import main
    from kdissect.engines import request

    capture = str(CAPTURES / "kafka-python-admin.pcap")
    assert main(["analyze", capture]) == 0
    assert "--engine spark" not in capsys.readouterr().err
    monkeypatch.setattr(request, "SPARK_HINT_BYTES", Path(capture).stat().st_size)
    assert main(["analyze", capture]) == 0
    hints = [line for line in capsys.readouterr().err.splitlines() if "--engine spark" in line]
    assert len(hints) == 1 and hints[0].startswith("kdissect: hint:")


def test_the_same_file_named_twice_is_read_once_and_said_so(tmp_path: Path) -> None:
    """``a.pcap a.pcap``, a directory and a file in it, a link to it: one file, read once (#20)."""
    folder = tmp_path / "caps"
    folder.mkdir()
    write(folder / "a.pcap", conversation(2))
    (tmp_path / "link.pcap").symlink_to(folder / "a.pcap")
    once = cli("analyze", str(folder / "a.pcap"))
    for args in ([folder / "a.pcap", folder / "a.pcap"], [folder, folder / "a.pcap"], [folder, tmp_path / "link.pcap"]):
        out = cli("analyze", *map(str, args))
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[0] == once.stdout.splitlines()[0]  # same packets and exchanges
        assert out.stderr.splitlines() == [f"kdissect: {args[1]} is {folder / 'a.pcap'} again: read once"]
        hint = [line for line in out.stdout.splitlines() if "kdissect report" in line]
        assert hint and hint[0].count(str(args[1])) == 1  # the report hint names a file once


def test_the_spark_engine_is_given_each_file_once(tmp_path: Path) -> None:
    from kdissect.engines.request import spark_inputs

    write(tmp_path / "a.pcap", conversation(2))
    (tmp_path / "remote").mkdir()
    write(tmp_path / "remote" / "b.pcap", conversation(2))
    uri = f"file://{tmp_path / 'remote'}"  # a URI is listed by its file system, and kept as a URI
    listed = spark_inputs([str(tmp_path), str(tmp_path / "a.pcap"), uri])
    assert listed == [str(tmp_path / "a.pcap"), f"file://{tmp_path / 'remote' / 'b.pcap'}"]
