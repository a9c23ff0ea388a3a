"""Synthetic TCP segments and checks on reassembly output, shared by the reassembly tests."""

from __future__ import annotations

from dataclasses import field

from kdissect.dataclass import dataclass
from kdissect.reassembly.reassembler import TcpReassembler
from kdissect.reassembly.streams import ReassemblyEvent, StreamData, StreamEnd, StreamGap, StreamStart
from kdissect.sources.segment import ACK, FIN, PSH, RST, SYN, TcpSegment

__all__ = ["ACK", "CLIENT", "FIN", "PSH", "RST", "SERVER", "SYN"]

CLIENT = ("10.0.0.1", 50000)
SERVER = ("10.0.0.2", 9092)
MASK = 0xFFFFFFFF


def seg(
    src: tuple[str, int] = CLIENT,
    dst: tuple[str, int] = SERVER,
    *,
    seq: int,
    ack: int = 0,
    flags: int = ACK,
    payload: bytes = b"",
    payload_len: int | None = None,
    ts: int = 0,
    window: int = 65535,
) -> TcpSegment:
    """One segment; ``payload_len`` defaults to the captured length (no truncation)."""
    return TcpSegment(
        ts_ns=ts,
        src_ip=src[0],
        src_port=src[1],
        dst_ip=dst[0],
        dst_port=dst[1],
        seq=seq & MASK,
        ack=ack & MASK,
        flags=flags,
        window=window,
        payload=payload,
        payload_len=len(payload) if payload_len is None else payload_len,
    )


def handshake(c_isn: int, s_isn: int, *, client=CLIENT, server=SERVER, ts: int = 0) -> list[TcpSegment]:
    """SYN, SYN-ACK, ACK: afterwards the client's data starts at c_isn+1, the server's at s_isn+1."""
    return [
        seg(client, server, seq=c_isn, flags=SYN, ts=ts),
        seg(server, client, seq=s_isn, ack=c_isn + 1, flags=SYN | ACK, ts=ts + 1),
        seg(client, server, seq=c_isn + 1, ack=s_isn + 1, ts=ts + 2),
    ]


def run(segments: list[TcpSegment], *, flush: bool = True, **options) -> list[ReassemblyEvent]:
    """Feed every segment to a fresh reassembler (then flush) and return all events."""
    r = TcpReassembler(**options)
    events: list[ReassemblyEvent] = []
    for s in segments:
        events.extend(r.feed(s))
    if flush:
        events.extend(r.flush())
    return events


@dataclass
class Stream:
    """One direction rebuilt from events, checked for order and exact accounting on the way."""

    start: int = 0  # offset of the first event
    end: int = 0  # offset just past the last event
    runs: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, "data" or gap reason)
    chunks: list[tuple[int, bytes]] = field(default_factory=list)  # delivered (offset, bytes)
    midstream: bool = False
    timestamps: list[tuple[int, int]] = field(default_factory=list)  # (offset, ts_ns) per StreamData

    @property
    def data(self) -> bytes:
        """The stream from ``start`` with gaps as zero bytes (only for small streams)."""
        buf = bytearray(self.end - self.start)
        for off, chunk in self.chunks:
            buf[off - self.start : off - self.start + len(chunk)] = chunk
        return bytes(buf)

    def gaps(self) -> list[tuple[int, int, str]]:
        return [r for r in self.runs if r[2] != "data"]


def stream(events: list[ReassemblyEvent], conn_id: int, direction: int) -> Stream:
    """Rebuild one direction, asserting that events are contiguous, in offset order, never repeated."""
    out = Stream()
    first = True
    for ev in events:
        if not isinstance(ev, StreamData | StreamGap) or ev.conn_id != conn_id or ev.direction != direction:
            continue
        if isinstance(ev, StreamGap) and ev.length is None:
            assert first and ev.reason == "midstream" and ev.offset == 0, ev
            out.midstream = True
            continue
        if first:
            out.start = out.end = ev.offset
            first = False
        assert ev.offset == out.end, f"event at {ev.offset}, expected {out.end}: {ev}"
        if isinstance(ev, StreamData):
            assert ev.data, "empty StreamData"
            out.chunks.append((ev.offset, ev.data))
            out.timestamps.append((ev.offset, ev.ts_ns))
            out.end += len(ev.data)
            kind = "data"
        else:
            assert ev.length > 0, ev
            out.end += ev.length
            kind = ev.reason
        out.runs.append((ev.offset, out.end, kind))
    return out


def ends(events: list[ReassemblyEvent]) -> list[StreamEnd]:
    return [e for e in events if isinstance(e, StreamEnd)]


def starts(events: list[ReassemblyEvent]) -> list[StreamStart]:
    return [e for e in events if isinstance(e, StreamStart)]
