"""One fuzz target per entry point: arbitrary bytes in, nothing out.

Each target drives a public entry point with the bytes it is given and lets through only
what that entry point documents: ``DecodeError`` from the frame decoders,
``CaptureFormatError`` when the bytes are not a capture at all. Anything else escaping
(and any failed accounting assertion) is a bug. The same functions serve atheris
(``fuzz/run.py``) and the test that replays the committed corpus (``tests/test_fuzz_corpus.py``),
so a crash found by fuzzing is a failing test as soon as its input is committed.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable

from kdissect.decoders import DecodeError, decode_request, decode_response, schema
from kdissect.decoders.jsonable import to_jsonable
from kdissect.decoders.records import Limits, decode_records
from kdissect.decoders.sasl import MECHANISMS, decode_token
from kdissect.engines import local
from kdissect.kafka.framing import Frame, FrameSplitter, Lost, Skipped
from kdissect.kafka.validators import RequestValidator
from kdissect.options import Options
from kdissect.reassembly.reassembler import TcpReassembler
from kdissect.reassembly.streams import StreamData, StreamEnd, StreamGap, StreamStart
from kdissect.report.render import tree_lines
from kdissect.sources import CaptureFormatError, ReaderLimits, SourceAnomaly, iter_capture
from kdissect.sources.gunzip import GZIP_MAGIC
from kdissect.sources.packets import PacketDecoder
from kdissect.sources.reader import CaptureParser
from kdissect.sources.segment import TcpSegment
from kdissect.sources.shapes import DecryptionSecrets
from kdissect.tables.columns import cells
from kdissect.testing.conversation import tcp_conversation

ALL_APIS = schema.all_api_versions()
# Small bounds so that inputs claiming huge sizes hit the limits fast.
READER_LIMITS = ReaderLimits(max_caplen=65_536, max_block_len=131_072)
RECORD_LIMITS = Limits(max_decompressed=1 << 20, max_depth=4)
FRAME_LIMIT = 1 << 20
_SEG = struct.Struct(">BhBBB")  # reassembly target: flags+direction, seq delta, length, captured, ts step
_MSG = struct.Struct(">BH")  # conversation target: direction, length


def capture(data: bytes) -> None:
    """A capture file (pcap, pcapng or gzip of either) through the source layer; read as the live
    engine reads it (records, then a batch decode) it must give the same events."""
    try:
        events = list(iter_capture(io.BytesIO(data), chunk_size=4096, limits=READER_LIMITS))
    except CaptureFormatError:
        return
    for ev in events:
        assert isinstance(ev, TcpSegment | SourceAnomaly | DecryptionSecrets), type(ev)
    if not data.startswith(GZIP_MAGIC):
        assert _as_live(data) == events


def _as_live(data: bytes) -> list:
    parser = CaptureParser(READER_LIMITS)
    records = parser.feed(data) + parser.close()
    decoder = PacketDecoder()
    out: list = []
    decoder.decode_all(records, out)
    decoder.flush(out)
    return out


def segments_from(data: bytes) -> list[TcpSegment]:
    """Read ``data`` as 6-byte segment descriptions of two connections sharing a port pair.

    Byte 0: bit 0 direction, bit 1 second connection, bits 2-6 TCP flags; then a signed
    sequence delta from the direction's ISN (near the 2^32 wrap), payload length, captured
    length (snap-length cuts) and a time step. Payload bytes are a function of the stream
    offset, so overlapping retransmissions agree unless the fuzzer makes them disagree.
    """
    out: list[TcpSegment] = []
    ts = 1_700_000_000_000_000_000
    isn = (0xFFFF_FF00, 0x7FFF_FFF0)
    for i in range(0, len(data) - _SEG.size + 1, _SEG.size):
        head, delta, length, captured, step = _SEG.unpack_from(data, i)
        direction, conn = head & 1, (head >> 1) & 1
        flags = (head >> 2) & 0x1F
        client, server = ("10.0.0.1", 40000 + conn), ("10.0.0.2", 9092)
        src, dst = (client, server) if direction == 0 else (server, client)
        seq = (isn[direction] + delta) & 0xFFFF_FFFF
        payload = bytes((delta + k) & 0xFF for k in range(min(length, captured)))
        ts += step * 1000
        out.append(TcpSegment(ts, src[0], src[1], dst[0], dst[1], seq, (isn[1 - direction] + 1) & 0xFFFF_FFFF,
                              flags, 65535, payload, length))
    return out


def reassembly(data: bytes) -> None:
    """TCP reassembly of fuzzer-chosen segments: per-direction events must stay in stream order."""
    r = TcpReassembler(max_buffer_bytes=4096, settle_segments=2)
    events = []
    for seg in segments_from(data):
        events += r.feed(seg)
    events += r.flush()
    next_offset: dict[tuple[int, int], int] = {}
    open_ids: set[int] = set()
    for ev in events:
        if isinstance(ev, StreamStart):
            assert ev.conn_id not in open_ids
            open_ids.add(ev.conn_id)
        elif isinstance(ev, StreamEnd):
            open_ids.remove(ev.conn_id)
        elif isinstance(ev, StreamData | StreamGap):
            assert ev.conn_id in open_ids
            key = (ev.conn_id, ev.direction)
            if key in next_offset:
                assert ev.offset == next_offset[key], (ev, next_offset[key])
            size = len(ev.data) if isinstance(ev, StreamData) else ev.length
            if size is None:
                next_offset.pop(key, None)
            else:
                assert size > 0 or isinstance(ev, StreamGap)
                next_offset[key] = ev.offset + size
    assert not open_ids


def framing(data: bytes) -> None:
    """The frame splitter with the real request validator over fuzzer-chosen chunks and gaps.

    Byte 0 is the chunk size, byte 1 a mask of which of every 8 chunks is lost (a gap);
    every byte of the stream must end up framed, skipped, lost or still pending.
    """
    if len(data) < 2:
        return
    step, lost_mask = data[0] + 1, data[1]
    stream = data[2:]
    splitter = FrameSplitter(RequestValidator(), max_frame=FRAME_LIMIT, max_hunt=64 * 1024)
    events = []
    for n, at in enumerate(range(0, len(stream), step)):
        chunk = stream[at : at + step]
        if lost_mask >> (n % 8) & 1:
            events += splitter.gap(at, len(chunk), n, "lost")
        else:
            events += splitter.feed(at, chunk, n)
        if n % 5 == 4:  # as when the peer answers a request the splitter has not seen
            events += splitter.doubt()
    events += splitter.finish()
    # A frame cut by gaps (its size field was captured) spans them, as do the pending bytes of
    # one still being skipped to its end: gaps inside those spans are counted by the span.
    at, left = splitter.pending()
    spans = [(at, at + left)] + [(f.offset, f.offset + 4 + f.wire_size) for f in events
                                 if isinstance(f, Frame) and f.wire_size is not None]
    accounted = 0
    for ev in events:
        if isinstance(ev, Frame):
            accounted += 4 + (len(ev.data) if ev.wire_size is None else ev.wire_size)
        elif isinstance(ev, Skipped | Lost):
            assert ev.length is not None and ev.length > 0
            inside = isinstance(ev, Lost) and any(a <= ev.offset and ev.offset + ev.length <= b for a, b in spans)
            accounted += 0 if inside else ev.length
    assert accounted + left == len(stream), (accounted, (at, left), len(stream))


def decode(data: bytes) -> None:
    """decode_request / decode_response and the CLI's renderings of what they return.

    The first two bytes pick an (api key, version, kind) from the schema table; a request
    names its own key and version, so the pick only matters for responses.
    """
    if len(data) < 2:
        return
    key, version, kind = ALL_APIS[struct.unpack_from(">H", data)[0] % len(ALL_APIS)]
    frame = data[2:]
    try:
        msg = decode_request(frame) if kind == "request" else decode_response(frame, key, version)
    except DecodeError as exc:
        assert exc.offset is None or 0 <= exc.offset <= len(frame)
        return
    json.dumps(to_jsonable(msg))
    for _ in tree_lines(msg, limit=64):
        pass


def records(data: bytes) -> None:
    """decode_records never raises; batches never claim more bytes than the field holds; the
    column form the records table uses (C loop into buffers) finds the same records."""
    rs = decode_records(data, limits=RECORD_LIMITS)
    assert sum(b.size for b in rs.batches) + rs.truncated <= len(data)
    for b in rs.batches:
        assert b.position + b.size <= len(data)
        assert b.decompressed_size <= RECORD_LIMITS.max_decompressed
        assert len(b.records) <= max(b.size, b.decompressed_size)
    as_columns = decode_records(data, limits=RECORD_LIMITS, columns=True)
    assert [b.records_decoded for b in as_columns.batches] == [len(b.records) for b in rs.batches]


def _run_pipeline(items: list, options: Options) -> None:
    """The local engine's whole run (no files): every table's rows and the summary figures; and the
    exchanges table alone, whose exchanges the native pairing makes into rows: the same table."""
    run = local.analyze_items(items, options)
    exchanges = {name: cells(column) for name, column in run.tables["exchanges"].items()}
    assert run.summary.exchanges == len(exchanges["status"])
    alone = local.analyze_items(items, options, tables=["exchanges"]).tables["exchanges"]
    assert {name: cells(column) for name, column in alone.items()} == exchanges


def pipeline(data: bytes) -> None:
    """A whole capture: sources, reassembly, framing, decoding, pairing and table rows."""
    try:
        items = list(iter_capture(io.BytesIO(data), chunk_size=4096, limits=READER_LIMITS))
    except CaptureFormatError:
        return
    _run_pipeline(items, Options(max_frame=FRAME_LIMIT))


def messages_from(data: bytes) -> list[tuple[int, bytes, int]]:
    """Read ``data`` as (direction byte, uint16 length, bytes) messages of one connection."""
    out = []
    at, t = 0, 1_700_000_000_000_000_000
    while at + _MSG.size <= len(data):
        direction, length = _MSG.unpack_from(data, at)
        at += _MSG.size
        out.append((direction & 1, data[at : at + length], t))
        at += length
        t += 1_000_000
    return [m for m in out if m[1]]


def conversation(data: bytes) -> None:
    """Kafka connection logic (roles, framing, pairing, SASL/TLS) on one TCP conversation.

    The pipeline target reaches this too, but through capture headers the fuzzer must keep
    intact; here every mutated byte lands in the Kafka streams. Direction byte bit 1 picks an
    unknown port, so detection by decoding is exercised as well.
    """
    msgs = messages_from(data)
    port = 31337 if data[:1] and data[0] & 2 else 9092
    _run_pipeline(tcp_conversation(msgs, server=("10.0.0.2", port), mss=512), Options(max_frame=FRAME_LIMIT))


def conversation_bytes(msgs: list[tuple[int, bytes]], *, unknown_port: bool = False) -> bytes:
    """The inverse of :func:`messages_from` (seeds and tests build inputs with it)."""
    flag = 2 if unknown_port else 0
    return b"".join(_MSG.pack(d | flag, len(m)) + m for d, m in msgs)


SASL_MECHANISMS: list[str | None] = [*MECHANISMS, None]


def sasl(data: bytes) -> None:
    """One SASL token: byte 0 picks the mechanism (low bits; None: unknown) and the side (bit 7).
    Nothing may escape; the view is JSON and says the token's true size."""
    if not data:
        return
    mechanism = SASL_MECHANISMS[(data[0] & 0x7F) % len(SASL_MECHANISMS)]
    token = decode_token(mechanism, data[1:], from_client=not data[0] & 0x80)
    assert token.size == len(data) - 1
    json.dumps(token.view())


TARGETS: dict[str, Callable[[bytes], None]] = {
    "capture": capture,
    "reassembly": reassembly,
    "framing": framing,
    "decode": decode,
    "records": records,
    "pipeline": pipeline,
    "conversation": conversation,
    "sasl": sasl,
}
