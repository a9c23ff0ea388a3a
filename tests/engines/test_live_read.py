"""``kdissect live --read``: a capture arriving through a pipe, a file still being written and a rotated
set give the same tables as ``analyze`` on the finished capture; what a new user gets wrong is one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas.testing as pdt

from kdissect.sources.reader import CaptureParser
from kdissect.sources.shapes import CaptureRecord
from kdissect.testing.pcapwrite import Frame, pcap_bytes
from tests.conftest import require_root
from tests.engines.live_helpers import KDISSECT, analyze, assert_same_tables, read_tables

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
PCAP = CAPTURES / "librdkafka-produce-consume.pcap"
PCAPNG = CAPTURES / "kafka-python-produce-consume.pcapng"


def _chunks(data: bytes, n: int) -> list[bytes]:
    """``n`` pieces of uneven sizes, cut anywhere (inside headers and records too)."""
    cuts = sorted({len(data) * k * k // (n * n) + k for k in range(1, n)})
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def _live(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [*KDISSECT, "live", *args, "--quiet", "--interval", "0.5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw
    )


def test_stdin_through_a_slow_writer_gives_the_tables_of_analyze(tmp_path):
    live = _live("--read", "-", "--out", str(tmp_path / "live"), stdin=subprocess.PIPE)
    assert live.stdin is not None
    for piece in _chunks(PCAPNG.read_bytes(), 7):
        live.stdin.write(piece)
        live.stdin.flush()
        time.sleep(0.3)
    stdout, stderr = live.communicate(timeout=60)
    assert live.returncode == 0, stderr
    assert b"stopped (end of input)" in stdout
    assert b"live " in stdout  # the periodic plain lines of a non-interactive run
    analyze(PCAPNG, tmp_path / "offline")
    assert assert_same_tables(tmp_path / "live", tmp_path / "offline") == ({"<stdin>"}, {str(PCAPNG)})


def test_a_growing_file_is_followed_until_sigint(tmp_path):
    growing = tmp_path / "growing.pcap"
    growing.write_bytes(b"")
    live = _live("--read", str(growing), "--out", str(tmp_path / "live"), "--write", str(tmp_path / "copy.pcapng"))

    def write_slowly() -> None:
        with growing.open("ab") as f:
            for piece in _chunks(PCAP.read_bytes(), 5):
                f.write(piece)
                f.flush()
                time.sleep(0.4)

    writer = threading.Thread(target=write_slowly)
    writer.start()
    writer.join()
    time.sleep(1.0)
    assert live.poll() is None  # a regular file is followed: its end is not the end of the input
    live.send_signal(signal.SIGINT)
    stdout, stderr = live.communicate(timeout=60)
    assert live.returncode == 0, stderr
    assert b"stopped (SIGINT)" in stdout
    analyze(PCAP, tmp_path / "offline")
    assert assert_same_tables(tmp_path / "live", tmp_path / "offline") == ({str(growing)}, {str(PCAP)})
    analyze(tmp_path / "copy.pcapng", tmp_path / "copy")
    assert_same_tables(tmp_path / "copy", tmp_path / "offline")


def _records(path: Path) -> list[CaptureRecord]:
    parser = CaptureParser()
    events = parser.feed(path.read_bytes()) + parser.close()
    return [e for e in events if isinstance(e, CaptureRecord)]


def test_a_rotated_set_is_read_in_natural_order_as_one_capture(tmp_path):
    records = _records(PCAP)
    rotated = tmp_path / "rotated"
    rotated.mkdir()
    thirds = [
        records[: len(records) // 3],
        records[len(records) // 3 : 2 * len(records) // 3],
        records[2 * len(records) // 3 :],
    ]
    names = ["cap.pcap", "cap.pcap2", "cap.pcap10"]  # natural order: not the alphabetical one
    for name, part in zip(names, thirds, strict=True):
        frames = [Frame(r.ts_ns, r.data) for r in part]
        (rotated / name).write_bytes(pcap_bytes(frames, link_type=part[0].link_type))
    (rotated / "cap.pcap1.gz").write_bytes(b"\x1f\x8b rotated copy, skipped")
    live = _live("--read", str(rotated), "--no-follow", "--out", str(tmp_path / "live"))
    stdout, stderr = live.communicate(timeout=60)
    assert live.returncode == 0, stderr
    assert f"{len(records)} packets".encode() in stdout
    analyze(PCAP, tmp_path / "offline")
    live_sources, _ = assert_same_tables(tmp_path / "live", tmp_path / "offline")
    # A connection's rows name the file it opened in: the first file, and the later ones that opened some.
    assert str(rotated / "cap.pcap") in live_sources <= {str(rotated / name) for name in names}


def test_a_stream_that_is_not_a_capture_is_one_line(tmp_path):
    done = subprocess.run(
        [*KDISSECT, "live", "--read", "-", "--quiet"],
        input=b"GET / HTTP/1.1\r\n\r\n" * 10,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.decode().strip().splitlines() == [
        "kdissect: not a pcap or pcapng capture: starts with 47 45 54 20 2f 20 48 54"
    ]


def test_a_file_of_a_rotated_set_that_is_not_a_capture_is_named_and_skipped(tmp_path):
    """As ``analyze`` does with a directory: the file is named on stderr, the rest is read, status 0."""
    (tmp_path / "cap.pcap").write_bytes(PCAP.read_bytes())
    (tmp_path / "cap.pcap1").write_text("# notes\n")
    (tmp_path / "cap.pcap2").write_bytes(b"")
    (tmp_path / "cap.pcap3").write_bytes(PCAPNG.read_bytes())
    done = subprocess.run([*KDISSECT, "live", "--read", str(tmp_path), "--no-follow", "--quiet"],
                          capture_output=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode().splitlines() == [
        f"kdissect: skipped {tmp_path / 'cap.pcap1'}: not a pcap or pcapng capture: "
        "starts with 23 20 6e 6f 74 65 73 0a",
        f"kdissect: skipped {tmp_path / 'cap.pcap2'}: empty capture file",
    ]
    packets = sum(len(_records(p)) for p in (PCAP, PCAPNG))
    assert f"{packets:,} packets".encode() in done.stdout  # the file after the skipped ones was read too


def test_a_rotated_set_with_no_capture_is_one_line_and_status_1(tmp_path):
    (tmp_path / "cap.pcap1").write_text("# notes\n")
    done = subprocess.run([*KDISSECT, "live", "--read", str(tmp_path), "--no-follow", "--quiet"],
                          capture_output=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.decode().splitlines()[-1].startswith(f"kdissect: {tmp_path / 'cap.pcap1'}: not a pcap")


def test_a_second_name_of_a_file_in_a_rotated_set_is_read_once(tmp_path):
    (tmp_path / "cap.pcap").write_bytes(PCAP.read_bytes())
    (tmp_path / "cap.pcap1").symlink_to(tmp_path / "cap.pcap")
    live = _live("--read", str(tmp_path), "--no-follow", "--out", str(tmp_path / "live"))
    stdout, stderr = live.communicate(timeout=60)
    assert live.returncode == 0, stderr
    assert stderr.decode().splitlines() == [
        f"kdissect: skipped {tmp_path / 'cap.pcap1'}: the same file as {tmp_path / 'cap.pcap'}: read once"]
    assert f"{len(_records(PCAP)):,} packets".encode() in stdout
    analyze(PCAP, tmp_path / "offline")
    assert_same_tables(tmp_path / "live", tmp_path / "offline")


def test_an_unknown_interface_is_one_line_and_status_2():
    done = subprocess.run([*KDISSECT, "live", "-i", "nosuch0", "--duration", "1"], capture_output=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == ["kdissect: no such interface: nosuch0 (see `ip link` for the names)"]


def test_without_privileges_is_one_line_saying_what_is_needed(tmp_path):
    # As `nobody` with no capabilities (CI runs as root, so this is a real unprivileged user).
    require_root()
    argv = [
        "setpriv",
        "--reuid=nobody",
        "--regid=nogroup",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        *KDISSECT,
        "live",
        "-i",
        "lo",
        "--duration",
        "1",
    ]
    done = subprocess.run(
        argv,
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
        env=os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2, lines
    assert len(lines) == 1 and lines[0].startswith("kdissect: no permission to capture on lo:")
    assert "CAP_NET_RAW and CAP_NET_ADMIN" in lines[0] and "--read" in lines[0]


def test_a_second_interrupt_quits_at_once_after_flushing():
    script = (
        "import os, signal, time\n"
        "from kdissect.engines.live import StopSignals\n"
        "with StopSignals(on_second=lambda: print('flushed', flush=True)) as stop:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    print('first', stop.requested, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(30)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20)
    assert done.returncode == 130
    assert done.stdout.splitlines() == ["first SIGINT", "flushed"]


def test_report_is_built_by_kdissect_report_or_refused_in_one_line(tmp_path):
    from kdissect.cli import _has_command

    done = subprocess.run(
        [*KDISSECT, "live", "--read", str(PCAP), "--no-follow", "--quiet", "--report", str(tmp_path / "r.html")],
        capture_output=True,
        timeout=120,
    )
    if _has_command("report"):
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "r.html").stat().st_size > 0
    else:
        assert done.returncode == 2
        assert done.stderr.decode().splitlines() == [
            "kdissect: --report needs the HTML report builder (`kdissect report`), which this build lacks"
        ]
        assert not (tmp_path / "r.html").exists()
    stdin = subprocess.run(
        [*KDISSECT, "live", "--read", "-", "--report", str(tmp_path / "r2.html")],
        input=PCAP.read_bytes(),
        capture_output=True,
        timeout=120,
    )
    assert stdin.returncode == 2  # no file to build it from: --write is needed


def test_a_rotated_set_whose_files_overlap_is_read_once(tmp_path):
    """The second file repeats the last third of the first (two writers, or a copy): live reads the files
    one after the other and drops the repeated packets, so the exchanges are the capture's."""
    records = _records(PCAP)
    rotated = tmp_path / "rotated"
    rotated.mkdir()
    n = len(records)
    for name, part in (("cap.pcap", records[: 2 * n // 3]), ("cap.pcap2", records[n // 3 :])):
        (rotated / name).write_bytes(pcap_bytes([Frame(r.ts_ns, r.data) for r in part], link_type=part[0].link_type))
    live = _live("--read", str(rotated), "--no-follow", "--out", str(tmp_path / "live"))
    _, stderr = live.communicate(timeout=60)
    assert live.returncode == 0, stderr
    analyze(PCAP, tmp_path / "offline")
    got, want = read_tables(tmp_path / "live"), read_tables(tmp_path / "offline")
    for name in ("exchanges", "records", "errors", "partitions"):
        pdt.assert_frame_equal(*(t[name].drop(columns="source_file") for t in (got, want)), obj=name)
    duplicates = got["anomalies"][got["anomalies"]["kind"] == "duplicate_packets"]
    assert duplicates["length"].sum() == 2 * n // 3 - n // 3
