"""Real captures whose beginning is cut off, as when a capture starts mid-conversation.

Built from the corpus (captures/*.pcap*): one connection's segments before a chosen packet are
dropped, so that packet's bytes are the first captured bytes of its direction. What the cut
capture decodes is compared with what the whole capture decodes.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from kdissect.engines import local
from kdissect.events import Anomaly, ConnectionSummary, Exchange
from kdissect.sources.files import iter_capture
from kdissect.sources.segment import TcpSegment
from kdissect.tables.columns import cells

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
API_VERSIONS, FETCH = 18, 1


@cache
def segments(name: str) -> tuple[TcpSegment, ...]:
    return tuple(s for s in iter_capture(CAPTURES / name) if isinstance(s, TcpSegment))


def exchanges(segs) -> list[Exchange]:
    return [ev for ev in local.events_from(segs) if isinstance(ev, Exchange)]


def _ends(seg: TcpSegment) -> frozenset:
    return frozenset({(seg.src_ip, seg.src_port), (seg.dst_ip, seg.dst_port)})


def cut_before(segs: tuple[TcpSegment, ...], first: int) -> list[TcpSegment]:
    """The capture without the segments of ``segs[first]``'s connection that come before it."""
    ends = _ends(segs[first])
    return [s for i, s in enumerate(segs) if i >= first or _ends(s) != ends]


def first_segment_of(segs: tuple[TcpSegment, ...], ex: Exchange, request: bool) -> int:
    """Index of the segment that starts the exchange's request (or response)."""
    msg = ex.request if request else ex.response
    assert msg is not None and ex.client is not None
    src = ex.client if request else ex.broker
    return next(
        i for i, s in enumerate(segs) if s.ts_ns == msg.ts_first and s.payload and (s.src_ip, s.src_port) == src
    )


def test_a_short_complete_request_at_the_first_captured_byte_is_decoded_and_paired() -> None:
    """aiokafka opens with ApiVersions v0 (an empty body: a 14-byte frame with its client id)."""
    name = "aiokafka-produce-consume.pcap"
    whole = exchanges(segments(name))
    short = [ex for ex in whole if ex.request.api_key == API_VERSIONS and ex.request.api_version == 0]
    assert short and all(ex.request.size < 64 for ex in short)
    for ex in short:
        cut = cut_before(segments(name), first_segment_of(segments(name), ex, request=True))
        events = list(local.events_from(cut))
        got = [
            e
            for e in events
            if isinstance(e, Exchange)
            and e.conn_id is not None
            and e.client == ex.client
            and e.request is not None
            and e.request.offset == 0
        ]
        assert got, f"the request at the first captured byte of {ex.client} was lost"
        assert got[0].status == "ok" and got[0].request.body == ex.request.body
        assert got[0].response.body == ex.response.body
        midstream = [
            a for a in events if isinstance(a, Anomaly) and a.kind == "midstream" and a.conn_id == got[0].conn_id
        ]
        assert {(a.direction, a.length) for a in midstream} == {("request", 0), ("response", 0)}
        [conn] = [c for c in events if isinstance(c, ConnectionSummary) and c.conn_id == got[0].conn_id]
        assert (conn.gaps, conn.gap_bytes) == (0, 0) and conn.tcp[0].gaps == conn.tcp[1].gaps == 0


def test_an_orphan_fetch_response_is_decoded_by_inference_with_its_records() -> None:
    """The connection is cut just before a Fetch response: its request is not in the capture. The
    Fetch requests that follow on the connection say what it answers (Fetch v16)."""
    name = "librdkafka-produce-consume.pcap"
    whole = exchanges(segments(name))
    fetches = [ex for ex in whole if ex.request.api_key == FETCH and ex.response.size > 1000]
    ex = fetches[-1]
    cut = cut_before(segments(name), first_segment_of(segments(name), ex, request=False))
    [orphan] = [o for o in exchanges(cut) if o.status == "orphan_response" and o.client == ex.client]
    assert orphan.inferred and orphan.request is None
    assert (orphan.response.api_key, orphan.response.api_version) == (FETCH, ex.request.api_version)
    assert orphan.response.body == ex.response.body
    assert orphan.response.raw is not None  # its bytes stay available

    def fetched(segs) -> list:
        run = local.analyze_items(iter(segs), tables=["records"])
        cols = run.tables["records"]
        rows = zip(*(cells(cols[c]) for c in ("direction", "correlation_id", "offset", "value")), strict=True)
        return [(off, val) for way, cid, off, val in rows if way == "fetch" and cid == ex.response.correlation_id]

    records = fetched(segments(name))
    assert records and fetched(cut) == records
