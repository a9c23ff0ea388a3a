"""The file front: paths and file objects, gzip, counters, bounded memory."""

from __future__ import annotations

import gzip
import io
import zlib

import pytest

from kdissect.sources import AnomalyKind, CaptureDecoder, CaptureFormatError, SourceAnomaly, SourceStats, iter_capture
from kdissect.sources.gunzip import GzipStream
from kdissect.testing.conversation import MSS_LOOPBACK, tcp_conversation
from kdissect.testing.packets import Encapsulation
from kdissect.testing.pcapwrite import Frame, pcap_bytes, write_capture

T0 = 1_700_000_000_000_000_000
MESSAGES = [(i % 2, bytes([65 + i]) * (700 * i + 10), T0 + i * 1_000_000) for i in range(12)]
SEGMENTS = tcp_conversation(MESSAGES)
PCAP = write_capture(SEGMENTS, nanosecond=True)
PCAPNG = write_capture(SEGMENTS, fmt="pcapng", nanosecond=True)


class Trickle(io.RawIOBase):
    """A pipe-like stream: short reads of at most ``step`` bytes, no seeking."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data, self._pos, self._step = data, 0, step

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        end = self._pos + min(self._step, size if size >= 0 else self._step)
        chunk, self._pos = self._data[self._pos : end], end
        return chunk


@pytest.mark.parametrize("data", [PCAP, PCAPNG], ids=["pcap", "pcapng"])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_paths_are_read_and_counted(tmp_path, data: bytes, compress: bool) -> None:
    path = tmp_path / "capture"
    path.write_bytes(gzip.compress(data) if compress else data)
    stats = SourceStats()
    assert list(iter_capture(path, chunk_size=1000, stats=stats)) == SEGMENTS
    assert stats.bytes_read == len(data)
    assert (stats.packets, stats.tcp_segments, stats.non_tcp, stats.anomalies) == (len(SEGMENTS),) * 2 + (0, 0)
    assert stats.captured_bytes == sum(14 + 20 + 20 + len(s.payload) for s in SEGMENTS)
    assert list(iter_capture(str(path))) == SEGMENTS


@pytest.mark.parametrize("step", [1, 2, 3, 1000])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_short_reads_from_a_pipe(step: int, compress: bool) -> None:
    data = gzip.compress(PCAPNG) if compress else PCAPNG
    assert list(iter_capture(Trickle(data, step), chunk_size=4096)) == SEGMENTS


def test_concatenated_gzip_members() -> None:
    half = len(PCAP) // 2
    data = gzip.compress(PCAP[:half]) + gzip.compress(PCAP[half:])
    assert list(iter_capture(io.BytesIO(data), chunk_size=100)) == SEGMENTS


def test_truncated_gzip_delivers_what_it_holds() -> None:
    compressed = gzip.compress(PCAP)
    events = list(iter_capture(io.BytesIO(compressed[: len(compressed) * 2 // 3]), chunk_size=512))
    segments = [e for e in events if not isinstance(e, SourceAnomaly)]
    anomalies = [e.kind for e in events if isinstance(e, SourceAnomaly)]
    assert 0 < len(segments) < len(SEGMENTS) and segments == SEGMENTS[: len(segments)]
    assert anomalies[0] == AnomalyKind.DECOMPRESSION
    assert set(anomalies) <= {AnomalyKind.DECOMPRESSION, AnomalyKind.TRUNCATED_FILE}


def test_damaged_gzip_stops_with_an_anomaly() -> None:
    compressed = bytearray(gzip.compress(PCAP, compresslevel=1))
    for i in range(len(compressed) // 2, len(compressed) // 2 + 40):
        compressed[i] ^= 0x5A
    stats = SourceStats()
    events = list(iter_capture(io.BytesIO(bytes(compressed)), chunk_size=256, stats=stats))
    assert AnomalyKind.DECOMPRESSION in [e.kind for e in events if isinstance(e, SourceAnomaly)]
    assert stats.anomalies == sum(isinstance(e, SourceAnomaly) for e in events)


def test_garbage_after_a_gzip_member_is_reported() -> None:
    events = list(iter_capture(io.BytesIO(gzip.compress(PCAP) + b"this is not gzip")))
    assert events[: len(SEGMENTS)] == SEGMENTS
    assert [e.kind for e in events[len(SEGMENTS) :]] == [AnomalyKind.DECOMPRESSION]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"hello, this is a text file\n" * 10, "not a pcap or pcapng capture"),
        (gzip.compress(b"hello, this is a text file\n"), "not a pcap or pcapng capture"),
        (b"", "empty"),
        (bytes.fromhex("28b52ffd") + bytes(40), "zstd"),
    ],
    ids=["text", "gzipped-text", "empty", "zstd"],
)
def test_not_a_capture_raises_one_line_error(tmp_path, content: bytes, words: str) -> None:
    path = tmp_path / "file"
    path.write_bytes(content)
    with pytest.raises(CaptureFormatError) as info:
        list(iter_capture(path))
    assert words in str(info.value) and "\n" not in str(info.value)


def test_missing_file_is_an_os_error(tmp_path) -> None:
    with pytest.raises(OSError):
        list(iter_capture(tmp_path / "nope.pcap"))


def test_gzip_pieces_are_bounded_even_for_a_bomb() -> None:
    bomb = gzip.compress(bytes(5_000_000), compresslevel=9)
    stream = GzipStream(piece_size=65536)
    total = 0
    for piece in stream.feed(bomb):
        assert isinstance(piece, bytes) and len(piece) <= 65536
        total += len(piece)
    assert total == 5_000_000 and stream.close() == []


def test_gzip_stream_detects_damage_in_the_header() -> None:
    stream = GzipStream()
    out = list(stream.feed(b"\x1f\x8b\x08\x00" + b"\xff" * 4 + b"\x00\x03" + zlib.compress(b"x")))
    assert [type(o) for o in out] == [SourceAnomaly]
    assert list(stream.feed(b"more")) == [] and stream.close() == []


def test_decoder_memory_stays_bounded_on_a_long_stream() -> None:
    """Loopback-sized records streamed in 64 KiB chunks: the decoder never holds more than
    one record plus one chunk, however long the stream."""
    segments = tcp_conversation(
        [(i % 2, bytes([i % 256]) * 200_000, T0 + i * 1000) for i in range(40)], mss=MSS_LOOPBACK
    )
    data = write_capture(segments, encap=Encapsulation(link_type=0), nanosecond=True)
    decoder = CaptureDecoder()
    chunk = 65536
    count = 0
    for start in range(0, len(data), chunk):
        count += len(decoder.feed(data[start : start + chunk]))
        assert decoder.buffered <= 16 + 65535 + 4 + chunk
    count += len(decoder.close())
    assert count == len(segments) and len(data) > 8_000_000


def test_feed_after_close_is_a_programming_error() -> None:
    decoder = CaptureDecoder()
    decoder.feed(pcap_bytes([Frame(T0, b"\0" * 20)], link_type=101))
    decoder.close()
    assert decoder.close() == []
    with pytest.raises(RuntimeError):
        decoder.feed(b"x")
