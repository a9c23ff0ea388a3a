"""Resource bounds on pathological input: work grows linearly, memory stays bounded.

Work is measured as the number of function calls (Python and C, via ``sys.setprofile``), not
wall-clock time: doubling a pathological input must roughly double the count. Memory is the
``tracemalloc`` peak, which must not grow with the input where a bound is promised.
"""

from __future__ import annotations

import random
import struct
import sys
import tracemalloc
from collections.abc import Callable

from kdissect.decoders.records import decode_records
from kdissect.kafka.framing import MAX_WAITING, PROOF_CREDIT, FrameSplitter
from kdissect.kafka.pairing import Pairer
from kdissect.kafka.pipeline import KafkaPipeline
from kdissect.kafka.validators import RequestValidator, ResponseValidator
from kdissect.options import Options
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.hostile import long_walk_heads
from kdissect.testing.kafka_frames import metadata_request, metadata_response, produce_request
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.records_encode import encode_batch, new_record
from kdissect.testing.tcp_helpers import SYN, seg

MiB = 1 << 20
T0 = 1_700_000_000_000_000_000


def calls(fn: Callable[[int], object], n: int) -> int:
    count = 0

    def profile(frame, event, arg) -> None:
        nonlocal count
        count += 1

    sys.setprofile(profile)
    try:
        fn(n)
    finally:
        sys.setprofile(None)
    return count


def assert_linear(fn: Callable[[int], object], n: int) -> None:
    small, large = calls(fn, n), calls(fn, 2 * n)
    assert large <= 2.4 * small, f"doubling the input multiplied the work by {large / small:.2f}"


def peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _hunt_behind_a_waiting_candidate(n: int) -> None:
    """A plausible request header claiming 3 MB, then random bytes in 1448-byte segments:
    every segment used to rescan the whole buffer (quadratic)."""
    rng = random.Random(1)
    s = FrameSplitter(RequestValidator())
    s.start_hunting()
    head = struct.pack(">i", 3_000_000) + metadata_request(1)[4:]
    s.feed(0, head, 0)
    at = len(head)
    while at < n:
        chunk = rng.randbytes(1448)
        s.feed(at, chunk, 0)
        at += len(chunk)


def test_hunting_behind_a_waiting_candidate_is_linear() -> None:
    assert_linear(_hunt_behind_a_waiting_candidate, 60_000)


def _pipeline(messages: list[tuple[int, bytes, int]], mss: int = 1448) -> None:
    p = KafkaPipeline(Options())
    for s in tcp_conversation(messages, mss=mss):
        p.feed(s)
    p.finish()


def test_response_garbage_full_of_size_like_words_is_linear() -> None:
    """Dense candidates that all wait for bytes (every 4 bytes claims ~4 MB) in the response direction."""
    def run(n: int) -> None:
        _pipeline([(0, metadata_request(1), T0), (1, b"\x00\x3f\xff\xf0" * (n // 4), T0 + 1)])

    assert_linear(run, 40_000)


def test_a_large_frame_in_one_byte_segments_is_linear() -> None:
    def run(n: int) -> None:
        _pipeline([(0, produce_request(1, records=b"r" * n), T0)], mss=1)

    assert_linear(run, 3_000)


def test_reversed_segments_are_linear() -> None:
    def run(n: int) -> None:
        from kdissect.reassembly.reassembler import TcpReassembler

        r = TcpReassembler()
        r.feed(seg(seq=99, flags=SYN))
        for i in reversed(range(n)):
            r.feed(seg(seq=100 + i * 10, payload=b"x" * 10))
        r.flush()

    assert_linear(run, 2_000)


def test_capture_of_tiny_packets_fed_byte_by_byte_is_linear() -> None:
    def run(n: int) -> None:
        data = write_capture(tcp_conversation([(i % 2, b"k", T0 + i) for i in range(n)]))
        from kdissect.sources import CaptureDecoder

        d = CaptureDecoder()
        for i in range(len(data)):
            d.feed(data[i : i + 1])
        d.close()

    assert_linear(run, 100)


def test_many_records_in_one_batch_are_linear() -> None:
    def run(n: int) -> None:
        decode_records(encode_batch([new_record(b"k", b"v", offset=i) for i in range(n)]))

    assert_linear(run, 2_000)


def test_hunting_memory_is_bounded_whatever_the_garbage() -> None:
    """Per direction: the hunt window and the remembered candidates, not the input, set the peak.

    Every fourth byte starts a response-like size field claiming just under the window, so
    each is a candidate waiting for its bytes: the worst case for what hunting remembers."""
    window = 32 * 1024
    garbage = b"\x00\x00\xff\xf0" * (4 * 1024)  # 16 KiB per segment

    def run(total: int) -> int:
        s = FrameSplitter(ResponseValidator(Pairer()), max_hunt=window)
        s.start_hunting()
        return peak(lambda: [s.feed(at, garbage, 0) for at in range(0, total, len(garbage))])

    small, large = run(128 * 1024), run(256 * 1024)
    assert large < 1.3 * small + 16 * 1024
    assert large < 4 * window + MAX_WAITING * 200  # bytes held + remembered candidates


def test_a_response_after_an_in_flight_frame_does_not_rescan_it() -> None:
    """Orphan responses arriving while a big request is in flight: each doubt is incremental."""
    def run(n: int) -> None:
        big = produce_request(500, records=b"r" * (40 * n))
        msgs = [(0, big[: len(big) // 2], T0)]
        msgs += [(1, metadata_response(1000 + i), T0 + i) for i in range(n)]
        msgs += [(0, big[len(big) // 2 :], T0 + n + 1)]
        _pipeline(msgs)

    assert_linear(run, 100)


class _CountingRequests(RequestValidator):
    """A request validator that records the decoding steps each proof spends."""

    def __init__(self) -> None:
        self.spent: list[int] = []

    def accept(
        self, buf: bytearray, start: int, end: int, at_chunk_edges: bool, budget: int
    ) -> tuple[bool | None, int]:
        verdict, left = super().accept(buf, start, end, at_chunk_edges, budget)
        self.spent.append(budget - left)
        return verdict, left


def test_proofs_spend_at_most_their_credit_per_byte_hunted() -> None:
    """Heads every 18 bytes whose proofs each walk ~60,000 topics before failing at the ~1 MB they
    claim: what all proofs spend is capped by the bytes hunted, and the candidates left unproven
    are counted (the session reports them as a ``cap`` anomaly)."""
    data = long_walk_heads(2048)
    counting = _CountingRequests()
    one = counting.accept(bytearray(data), 4, 4 + 0x0010_AABB, False, 10**9)
    assert one == (False, 10**9 - counting.spent[0]) and counting.spent[0] > 100_000  # ~10^4 steps per byte
    s = FrameSplitter(counting)
    s.start_hunting()
    for at in range(0, len(data), 1448):
        s.feed(at, data[at : at + 1448], 0)
    s.finish()
    assert len(counting.spent) > 1000 and s.starved > 0
    assert sum(counting.spent[1:]) <= PROOF_CREDIT * len(data)
