"""Synthetic Kafka conversations as capture files, built with the project's own encoder.

For what real traffic can't produce on demand: loss, reordering, retransmission, overlap,
mid-stream starts, snap-length cuts, foreign bytes on Kafka ports, 4-tuple reuse.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kdissect.sources.segment import TcpSegment
from kdissect.testing.conversation import MSS_ETHERNET, tcp_conversation
from kdissect.testing.kafka_frames import metadata_request, metadata_response, produce_request, produce_response
from kdissect.testing.pcapwrite import write_capture

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def kafka_messages(n: int, *, payload: int = 3000, t0: int = T0) -> list[tuple[int, bytes, int]]:
    """n Metadata round trips and n Produce round trips, 1 ms apart (corr ids 1..n, 101..100+n)."""
    msgs = []
    for i in range(1, n + 1):
        t = t0 + i * 10 * MS
        msgs.append((0, metadata_request(i), t))
        msgs.append((1, metadata_response(i), t + MS // 4))
        msgs.append((0, produce_request(100 + i, records=bytes([i % 251]) * payload), t + 2 * MS))
        msgs.append((1, produce_response(100 + i), t + 3 * MS))
    return msgs


def conversation(n: int = 6, *, port: int = 9092, mss: int = MSS_ETHERNET, client_port: int = 40000,
                 t0: int = T0, **kw) -> list[TcpSegment]:
    return tcp_conversation(kafka_messages(n, t0=t0), server=("10.0.0.2", port), client=("10.0.0.1", client_port),
                            mss=mss, **kw)


def write(path: Path, segments: list[TcpSegment], **kw) -> Path:
    path.write_bytes(write_capture(segments, **kw))
    return path


def with_payload(seg: TcpSegment, payload: bytes) -> TcpSegment:
    return replace(seg, payload=payload, payload_len=len(payload))
