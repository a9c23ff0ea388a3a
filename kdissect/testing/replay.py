"""A real capture's TCP segments replayed over and over, as endless traffic for long-run tests.

Each round moves the clients to a new address (``10.x.y.z``) so its connections are new ones, and
moves time on by the capture's span plus a second, so capture-time machinery (idle eviction,
rolling figures) sees days pass in seconds. Brokers keep their address and port.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from kdissect.sources.decoder import decode_capture
from kdissect.sources.segment import TcpSegment

NS = 1_000_000_000


def capture_segments(data: bytes) -> list[TcpSegment]:
    events, _ = decode_capture(data)
    return [e for e in events if isinstance(e, TcpSegment)]


def _client_address(round_no: int) -> str:
    return f"10.{(round_no >> 16) & 255}.{(round_no >> 8) & 255}.{round_no & 255}"


def replay(segments: list[TcpSegment], broker_ports: set[int], rounds: int) -> Iterator[TcpSegment]:
    """``rounds`` copies of ``segments``; ``broker_ports`` tell the broker's side from the client's."""
    if not segments:
        return
    first = segments[0].ts_ns
    span = segments[-1].ts_ns - first + NS
    for n in range(rounds):
        client, shift = _client_address(n), n * span
        for seg in segments:
            if seg.dst_port in broker_ports:
                yield replace(seg, src_ip=client, ts_ns=seg.ts_ns + shift)
            else:
                yield replace(seg, dst_ip=client, ts_ns=seg.ts_ns + shift)
