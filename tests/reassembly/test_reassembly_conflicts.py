"""Retransmitted or overlapping copies whose bytes differ from the copy kept are reported
(``StreamConflict`` on the stream range that differs); the first copy is still the one delivered."""

from __future__ import annotations

from kdissect.engines import local
from kdissect.events import Anomaly, ConnectionSummary, Exchange
from kdissect.reassembly.streams import StreamConflict
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.kafka_frames import metadata_request, metadata_response
from kdissect.testing.synthetic import T0, with_payload
from kdissect.testing.tcp_helpers import ends, handshake, run, seg, stream

C0, S0 = 1000, 5000


def _conflicts(events) -> list[tuple[int, int, int]]:
    return [(e.direction, e.offset, e.length) for e in events if isinstance(e, StreamConflict)]


def test_a_retransmission_with_other_bytes_is_reported_where_it_differs() -> None:
    events = run([*handshake(C0, S0), seg(seq=C0 + 1, payload=b"abcdefgh"), seg(seq=C0 + 1, payload=b"abcXeYgh")])
    assert _conflicts(events) == [(0, 3, 3)]  # bytes 3..5 differ ("dEf" -> "XeY": first 3, last 5)
    assert stream(events, 0, 0).data == b"abcdefgh"  # first copy wins
    assert ends(events)[0].stats[0].conflicts == 1


def test_a_faithful_retransmission_is_no_conflict() -> None:
    events = run(
        [
            *handshake(C0, S0),
            seg(seq=C0 + 1, payload=b"abcdefgh"),
            seg(seq=C0 + 1, payload=b"abcdefgh"),
            seg(seq=C0 + 5, payload=b"efghijkl"),
        ]
    )
    assert _conflicts(events) == []
    assert stream(events, 0, 0).data == b"abcdefghijkl"


def test_an_overlap_that_disagrees_with_the_delivered_bytes_is_reported() -> None:
    events = run([*handshake(C0, S0), seg(seq=C0 + 1, payload=b"abcdefgh"), seg(seq=C0 + 7, payload=b"ZZijkl")])
    assert _conflicts(events) == [(0, 6, 2)]
    assert stream(events, 0, 0).data == b"abcdefghijkl"


def test_a_copy_that_disagrees_with_held_out_of_order_bytes_is_reported() -> None:
    events = run(
        [
            *handshake(C0, S0),
            seg(seq=C0 + 5, payload=b"efgh"),
            seg(seq=C0 + 5, payload=b"eXgh"),
            seg(seq=C0 + 1, payload=b"abcd"),
        ]
    )
    assert _conflicts(events) == [(0, 5, 1)]
    assert stream(events, 0, 0).data == b"abcdefgh"


def test_the_kafka_stage_reports_the_conflict_on_that_stream_range() -> None:
    """A request's segment retransmitted with a flipped byte: the anomaly row names the range; the
    exchange decodes from the first copy."""
    request = metadata_request(1)
    segs = tcp_conversation([(0, request, T0), (1, metadata_response(1), T0 + 1)], mss=40)
    first = next(i for i, s in enumerate(segs) if s.payload)
    altered = bytearray(segs[first].payload)
    altered[20] ^= 0xFF
    segs.insert(first + 1, with_payload(segs[first], bytes(altered)))
    events = list(local.events_from(segs))
    [conflict] = [e for e in events if isinstance(e, Anomaly)]
    assert (conflict.kind, conflict.direction, conflict.offset, conflict.length) == (
        "retransmission_conflict",
        "request",
        20,
        1,
    )
    [ex] = [e for e in events if isinstance(e, Exchange)]
    assert ex.status == "ok"
    [conn] = [e for e in events if isinstance(e, ConnectionSummary)]
    assert conn.tcp is not None and conn.tcp[0].conflicts == 1
