"""The reassembler's and the sources' counters reach the connections table (per direction) and
the summary, instead of being counted and dropped."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import kdissect
from kdissect.sources.segment import ACK
from kdissect.tables.columns import TCP_COUNTERS
from kdissect.testing.synthetic import conversation, write


def _with_tcp_noise(tmp_path: Path) -> tuple[Path, int]:
    """A conversation where the client retransmits a data segment, then sends a keep-alive (one
    garbage byte one before what it has sent) before closing; and the retransmitted length."""
    segs = conversation(2)
    to_broker = [i for i, s in enumerate(segs) if s.payload and s.dst_port == 9092]
    dup = segs[to_broker[1]]
    last = segs[to_broker[-1]]
    keepalive = replace(
        last,
        seq=(last.seq + len(last.payload) - 1) & 0xFFFFFFFF,
        payload=b"\x00",
        payload_len=1,
        flags=ACK,
        ts_ns=segs[-3].ts_ns + 1,
    )
    noisy = [*segs[: to_broker[1] + 1], replace(dup, ts_ns=dup.ts_ns + 1), *segs[to_broker[1] + 1 : -2]]
    return write(tmp_path / "noisy.pcap", [*noisy, keepalive, *segs[-2:]]), len(dup.payload)


def test_connection_rows_carry_each_direction_s_counters(tmp_path: Path) -> None:
    path, resent = _with_tcp_noise(tmp_path)
    [row] = kdissect.open_capture(path).connections.to_dict("records")
    assert {f"tcp_{c}_{side}" for c in TCP_COUNTERS for side in ("to_broker", "to_client")} <= set(row)
    assert row["tcp_retransmissions_to_broker"] == row["retransmissions"] == 1
    assert row["tcp_retransmissions_to_client"] == 0
    assert row["tcp_overlap_bytes_to_broker"] == resent
    assert (row["tcp_keepalives_to_broker"], row["tcp_keepalives_to_client"]) == (1, 0)
    assert row["tcp_bytes_to_broker"] == row["bytes_to_broker"]  # every byte to the broker is a Kafka frame
    assert row["tcp_segments_to_broker"] > 0 and row["tcp_segments_to_client"] > 0


def test_the_summary_prints_capture_and_tcp_counters(tmp_path: Path) -> None:
    path, resent = _with_tcp_noise(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "kdissect.cli", "analyze", str(path)], capture_output=True, text=True, check=True
    ).stdout
    packets = int(out.split(" packets", 1)[0])
    captured = path.stat().st_size - 24 - 16 * packets  # pcap: file header, then a header per record
    assert f"capture: {captured:,} bytes captured in {packets} packets ({packets} TCP segments, 0 IP fragments" in out
    assert f"TCP: 1 retransmitted segments, {resent:,} bytes received twice, 1 keep-alives" in out
