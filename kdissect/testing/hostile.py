"""Hostile captures, one per class of input that once cost superlinear time or unbounded memory.

Each builder takes a size ``n`` and returns the bytes of a capture file, so the resource-bounds
tests (``tests/<stage>/test_bounds_*.py``), the fuzz target and ``bench/bench_bounds.py`` can make the same
input at two sizes and compare. Nothing here is large on disk: the inputs are generated.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Callable, Iterator

import lz4.frame

from kdissect.decoders.codecs import CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD, compress
from kdissect.sources.segment import ACK, SYN, TcpSegment
from kdissect.testing.conversation import MSS_LOOPBACK, tcp_conversation
from kdissect.testing.encoder import encode_request, encode_response
from kdissect.testing.packets import ipv4_packet, link_header
from kdissect.testing.pcapwrite import ETHERNET, Frame, pcap_bytes, write_capture
from kdissect.testing.records_encode import encode_batch, encode_message, encode_record, new_record, wrapper

T0 = 1_700_000_000_000_000_000
LINKTYPE_ETHERNET = 1


def produce_with(records: bytes, cid: int = 1, version: int = 9) -> bytes:
    """A Produce request carrying ``records`` as its one partition's records field."""
    body = {
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}],
    }
    return encode_request(0, version, body, correlation_id=cid, client_id="hostile")


def _one_connection(messages: list[tuple[int, bytes, int]], **kw) -> bytes:
    return write_capture(tcp_conversation(messages, **kw))


def ip_fragments(n: int) -> bytes:
    """``n`` 8-byte IPv4 fragments of four interleaved datagrams (distinct ids), every other
    offset left out so each datagram is all holes, offsets sent again past 4,000 (overlaps)."""
    head = link_header(ETHERNET, 4)
    frames = []
    for i in range(n):
        k, datagram = divmod(i, 4)
        at = 8 + 16 * (k % 4000)
        packet = ipv4_packet("10.0.0.1", "10.0.0.2", bytes(8), ident=datagram, frag_offset=at, more=True)
        frames.append(Frame(T0 + i * 1000, head + packet))
    return pcap_bytes(frames, link_type=LINKTYPE_ETHERNET)


def pipelined_requests(n: int) -> bytes:
    """``n`` ApiVersions requests sent back to back, then their ``n`` answers in order."""
    requests = [(0, encode_request(18, 3, _API_VERSIONS_BODY, correlation_id=i), T0 + i) for i in range(n)]
    answers = [(1, encode_response(18, 3, {"error_code": 0}, correlation_id=i), T0 + n + i) for i in range(n)]
    return _one_connection(requests + answers, mss=MSS_LOOPBACK)


_API_VERSIONS_BODY = {"client_software_name": "h", "client_software_version": "1"}


def lz4_tiny_frames(n: int) -> bytes:
    """A Produce request whose lz4 batch is ``n`` lz4 frames of a few bytes each."""
    records = b"".join(encode_record(new_record(b"k", b"v" * 8, offset=i)) for i in range(max(1, n // 4)))
    frames = b"".join(lz4.frame.compress(records[i : i + 4]) for i in range(0, len(records), 4))
    count = max(1, n // 4)
    batch = encode_batch(
        [new_record(b"k", b"v" * 8, offset=i) for i in range(count)], codec=CODEC_LZ4, compressor=lambda _: frames
    )
    return _one_connection([(0, produce_with(batch), T0)], mss=MSS_LOOPBACK)


def legacy_crc_storm(n: int) -> bytes:
    """A Produce v2 request holding ``n`` magic 1 messages, every one with a wrong CRC."""
    messages = b"".join(encode_message(new_record(b"k", b"v", offset=i, timestamp=i), magic=1, crc=i) for i in range(n))
    return _one_connection([(0, produce_with(messages, version=2), T0)], mss=MSS_LOOPBACK)


def gzip_wrapper_storm(n: int) -> bytes:
    """A Produce v2 request holding one gzip-compressed magic 0 wrapper of ``n`` inner messages of
    26 bytes (null key and value), every one with a wrong CRC: a few KiB on the wire, millions of
    messages once inflated (the top-level batch bound sees one message)."""
    inner = b"".join(_LEGACY_NULL.pack(i, 14, i, 0, 0, -1, -1) for i in range(n))
    outer = wrapper([], magic=0, codec=CODEC_GZIP, offset=max(0, n - 1), compressor=lambda _: gzip.compress(inner))
    return _one_connection([(0, produce_with(encode_message(outer, magic=0), version=2), T0)], mss=MSS_LOOPBACK)


_LEGACY_NULL = struct.Struct(">qiIbbii")  # offset, size, crc, magic, attributes, key and value length (null)


def gzip_of_zeros(n: int) -> bytes:
    """A gzip file: a pcap header, then ``n`` KiB of zeros (empty pcap records by the million)."""
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET)

    def body() -> Iterator[bytes]:
        yield header
        zeros = bytes(1024)
        for _ in range(n):
            yield zeros

    return gzip.compress(b"".join(body()), compresslevel=9)


def short_connections(n: int) -> bytes:
    """``n`` connections of one SYN each, then ``n`` of one data segment each."""
    segments = []
    for i in range(n):
        port = 1024 + i % 60000
        src = f"10.{1 + (i // 60000) % 250}.0.1"
        syn = TcpSegment(T0 + i * 1000, src, port, "10.0.0.2", 9092, 1000, 0, SYN, 65535, b"", 0)
        data = TcpSegment(T0 + i * 1000 + 1, src, port, "10.0.0.3", 9092, 5000, 1, ACK, 65535, b"\0" * 8, 8)
        segments += [syn, data]
    return write_capture(segments)


def frame_heads(n: int) -> bytes:
    """A connection picked up mid-stream whose ``n`` KiB are plausible request heads, each a size
    field claiming megabytes followed by a valid api key, version and client id."""
    head = struct.pack(">ihhih", 3_000_000, 3, 12, 7, 4) + b"evil"
    unit = head * (1024 // len(head)) + head[: 1024 % len(head)]
    return _one_connection([(0, unit * n, T0)], handshake=False, close=False)


def long_walk_heads(n: int) -> bytes:
    """``n`` KiB of 18-byte Metadata v0 request heads, each claiming ~1 MB and 262,144 topics, and
    each read as one topic name by every head before it: a proof that decodes until the claimed
    end walks ~60,000 topics, for every 18 bytes."""
    head = struct.pack(">ihhihi", 0x0010_AABB, 3, 0, -1, 0, 0x4_0000)  # size's low bytes: a 16-byte name
    return head * (n * 1024 // len(head))


def long_walks(n: int) -> bytes:
    """A connection picked up mid-stream that carries ``long_walk_heads(n)``."""
    return _one_connection([(0, long_walk_heads(n), T0)], handshake=False, close=False)


def _produce_answer() -> bytes:
    """The broker's answer (Produce v9, correlation id 0) to a request of :func:`produce_with`."""
    answer = {
        "responses": [{"name": "t", "partition_responses": [{"index": 0, "error_code": 0, "base_offset": 0}]}],
        "throttle_time_ms": 0,
    }
    return encode_response(0, 9, answer, correlation_id=0)


def midstream_traffic(n: int) -> bytes:
    """Not hostile: ``n`` KiB of Produce requests of 40 JSON records, each answered, picked up
    mid-stream (the client's first segment was not captured): what hunting into ordinary traffic
    costs, the yardstick for the crafted heads above."""
    records = [new_record(b"key-%d" % i, b'{"id": %d, "v": "%s"}' % (i, b"x" * (i * 5)), offset=i) for i in range(40)]
    request, response = produce_with(encode_batch(records), cid=0), _produce_answer()
    messages = []
    for i in range(n * 1024 // len(request) + 1):
        cid = struct.pack(">i", i)  # bytes 8-11 of a request, 4-7 of a response
        messages.append((0, request[:8] + cid + request[12:], T0 + i * 1000))
        messages.append((1, response[:4] + cid + response[8:], T0 + i * 1000 + 500))
    return write_capture(tcp_conversation(messages, handshake=False, close=False)[1:])


def out_of_order_segments(n: int) -> bytes:
    """One connection of ``n`` 100-byte segments sent in swapped pairs (every other one late)."""
    payload = b"\0" * (100 * n)
    segments = tcp_conversation([(0, payload, T0)], mss=100, close=False)
    head, body = segments[:3], segments[3:]
    for i in range(0, len(body) - 1, 2):
        body[i], body[i + 1] = body[i + 1], body[i]
    return write_capture(head + body)


def inflating_batch(n: int) -> bytes:
    """``n`` Produce requests, each one zstd batch of 16 records of 1 MiB of zeros."""
    records = [new_record(b"k", bytes(1 << 20), offset=i) for i in range(16)]
    batch = encode_batch(records, codec=CODEC_ZSTD, compressor=lambda raw: compress(CODEC_ZSTD, raw))
    messages = [(0, produce_with(batch, cid=i), T0 + i) for i in range(n)]
    return _one_connection(messages, mss=MSS_LOOPBACK)


def many_exchanges(n: int) -> bytes:
    """``n`` Produce requests of 8 records of 64 bytes, each answered: not hostile, just many
    exchanges and records (what a summary run must not hold, nor a run with output files). The
    client sends 1,000 requests at a time, then the broker their answers."""
    records = [new_record(b"key-%d" % i, bytes(64), offset=i) for i in range(8)]
    request, response = produce_with(encode_batch(records), cid=0), _produce_answer()
    messages = []
    for start in range(0, n, 1000):
        cids = [struct.pack(">i", i) for i in range(start, min(n, start + 1000))]  # bytes 8-11, 4-7 of the frames
        messages.append((0, b"".join(request[:8] + cid + request[12:] for cid in cids), T0 + start))
        messages.append((1, b"".join(response[:4] + cid + response[8:] for cid in cids), T0 + start + 500))
    return _one_connection(messages, mss=MSS_LOOPBACK)


def many_brokers(n: int) -> bytes:
    """``n`` Metadata answers, each announcing 1,000 brokers none announced before (node id, host and
    port all new): ``1,000 n`` distinct brokers, where a cluster has a handful."""
    request = encode_request(3, 1, {"topics": []}, correlation_id=0)
    messages = []
    for i in range(n):
        nodes = range(i * 1000, (i + 1) * 1000)
        brokers = [{"node_id": node, "host": f"b{node}.example", "port": 1024 + node % 60000, "rack": None}
                   for node in nodes]  # fmt: skip
        answer = encode_response(3, 1, {"brokers": brokers, "controller_id": 0, "topics": []}, correlation_id=i)
        messages.append((0, request[:8] + struct.pack(">i", i) + request[12:], T0 + i * 1000))
        messages.append((1, answer, T0 + i * 1000 + 500))
    return _one_connection(messages, mss=MSS_LOOPBACK)


BUILDERS: dict[str, Callable[[int], bytes]] = {
    "ip_fragments": ip_fragments,
    "pipelined_requests": pipelined_requests,
    "lz4_tiny_frames": lz4_tiny_frames,
    "legacy_crc_storm": legacy_crc_storm,
    "gzip_wrapper_storm": gzip_wrapper_storm,
    "gzip_of_zeros": gzip_of_zeros,
    "short_connections": short_connections,
    "frame_heads": frame_heads,
    "long_walks": long_walks,
    "midstream_traffic": midstream_traffic,
    "out_of_order_segments": out_of_order_segments,
    "inflating_batch": inflating_batch,
    "many_exchanges": many_exchanges,
    "many_brokers": many_brokers,
}
