"""The CLI on damaged and hostile captures: exit 0 with the damage summarised whenever the
capture could be read; a one-line error and a non-zero status only when nothing could be."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.synthetic import T0, conversation, write


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect.cli", *args], capture_output=True, text=True, timeout=300)


def anomaly_lines(stdout: str) -> dict[str, str]:
    """``kind -> rest of the line`` from the summary's anomalies section."""
    section = stdout.split("not decoded / anomalies", 1)[1].splitlines()[1:]
    return {line.split(":", 1)[0].strip(): line.split(":", 1)[1] for line in section if line.startswith("  ")}


def test_truncated_capture_exits_0_and_says_what_was_cut(tmp_path: Path) -> None:
    data = write_capture(conversation(4))
    path = tmp_path / "cut.pcap"
    path.write_bytes(data[: len(data) * 2 // 3])
    out = cli("analyze", str(path))
    assert out.returncode == 0 and out.stderr == ""
    found = anomaly_lines(out.stdout)
    assert found["truncated_file"].startswith(" 1") and "cut short" in found["truncated_file"]
    assert "Metadata" in out.stdout


def test_lossy_capture_summary_counts_skipped_frames_by_kind(tmp_path: Path) -> None:
    segs = conversation(4)
    del segs[12]  # a segment in the middle of a produce request
    out = cli("analyze", str(write(tmp_path / "loss.pcap", segs)))
    assert out.returncode == 0, out.stderr
    found = anomaly_lines(out.stdout)
    assert found["gap"].startswith(" 1, 1,448 bytes") and "packet loss" in found["gap"]
    # the gap's length is known and the cut request's size field was captured: it stays in sync
    # and pairs with its response (flagged as cut), so no exchange is lost to the gap
    assert "1 Kafka), 8 exchanges" in out.stdout and "status:" not in out.stdout


def test_non_kafka_on_a_kafka_port_exits_0(tmp_path: Path) -> None:
    http = [(0, b"GET / HTTP/1.1\r\nHost: b\r\n\r\n", T0), (1, b"HTTP/1.1 404 Not Found\r\n\r\n", T0 + 1)]
    path = tmp_path / "http.pcap"
    path.write_bytes(write_capture(tcp_conversation(http)))
    out = cli("analyze", str(path))
    assert out.returncode == 0, out.stderr
    assert "no Kafka traffic found" in out.stdout
    assert anomaly_lines(out.stdout)["not_kafka"].startswith(" 1")


def test_capture_with_no_packets_is_readable(tmp_path: Path) -> None:
    path = tmp_path / "empty.pcap"
    path.write_bytes(write_capture([]))
    out = cli("analyze", str(path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("0 packets")


def test_nothing_readable_fails_in_one_line(tmp_path: Path) -> None:
    header = write_capture([])
    cases = {
        "empty.pcap": b"",
        "random.pcap": bytes(range(256)) * 4,
        "only-corrupt-records.pcap": header + struct.pack("<IIII", 0, 0, 0x7FFF_FFFF, 0x7FFF_FFFF) + b"\xee" * 64,
        "half-a-header.pcap": header[:10],
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        for command in ("analyze", "show") if name == "only-corrupt-records.pcap" else ("analyze",):
            out = cli(command, str(path))
            assert out.returncode != 0, (name, command, out.stdout)
            assert out.stderr.count("\n") == 1 and out.stderr.startswith("kdissect: "), (name, out.stderr)
            assert "Traceback" not in out.stderr


def test_show_on_a_damaged_capture_prints_what_decoded(tmp_path: Path) -> None:
    data = bytearray(write_capture(conversation(3)))
    data[len(data) // 2 : len(data) // 2 + 40] = b"\xff" * 40
    path = tmp_path / "damaged.pcap"
    path.write_bytes(bytes(data))
    out = cli("show", str(path))
    assert out.returncode == 0, out.stderr
    assert "=== conn" in out.stdout and "Traceback" not in out.stderr


def test_show_piped_into_a_reader_that_stops_early_is_quiet(tmp_path: Path) -> None:
    """``kdissect show CAPTURE | head``: the closed pipe ends the run quietly with status 0."""
    path = write(tmp_path / "many.pcap", conversation(40))
    show = subprocess.Popen([sys.executable, "-m", "kdissect.cli", "show", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert show.stdout is not None and show.stdout.readline().startswith(b"=== conn")
    show.stdout.close()  # the reader goes away after one line
    _, err = show.communicate(timeout=300)
    assert show.returncode == 0 and err == b"", err
