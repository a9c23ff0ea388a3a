"""Throughput of the capture layer (run by hand): packets/s and MB/s.

    python bench/bench_sources.py                 # synthetic NIC- and loopback-shaped captures
    python bench/bench_sources.py --file X.pcap   # a capture of your own (pcap, pcapng, gzip)
    python bench/bench_sources.py --stream-gb 4   # also stream 4 GB through iter_capture, print peak RSS

Measures, on the same bytes: the push parser alone (records), the whole source
(``iter_capture``: records -> TcpSegment), and the dpkt alternative (``dpkt.pcap`` /
``dpkt.pcapng`` readers + ``dpkt.ethernet.Ethernet`` decoding into TcpSegment); and the
link/IP/TCP step alone, hand-written vs dpkt, on records already in memory.
"""

from __future__ import annotations

import argparse
import gzip
import io
import resource
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import dpkt

from kdissect.sources import CaptureParser, PacketDecoder, SourceStats, iter_capture
from kdissect.sources.segment import TcpSegment
from kdissect.sources.shapes import CaptureRecord
from kdissect.testing.conversation import MSS_ETHERNET, MSS_LOOPBACK, tcp_conversation
from kdissect.testing.pcapwrite import Frame, pcap_bytes, segment_frame_list

LINKTYPE_ETHERNET = 1


def synthetic_capture(mss: int, target_bytes: int) -> bytes:
    """An Ethernet pcap of about ``target_bytes``: one request/response conversation's
    frames repeated with advancing timestamps (parsing cost does not depend on content)."""
    messages = [
        (i % 2, bytes([i % 251]) * (8 * mss + 100), 1_700_000_000_000_000_000 + i * 1_000_000) for i in range(8)
    ]
    frames = segment_frame_list(tcp_conversation(messages, mss=mss))
    span = frames[-1].ts_ns - frames[0].ts_ns + 1_000_000
    per_copy = sum(len(f.data) + 16 for f in frames)
    copies = max(1, target_bytes // per_copy)
    tiled = [Frame(f.ts_ns + k * span, f.data) for k in range(copies) for f in frames]
    return pcap_bytes(tiled, link_type=LINKTYPE_ETHERNET)


def dpkt_segments(data: bytes) -> list[TcpSegment]:
    """The dpkt way: its file reader, then Ethernet/IP/TCP objects into TcpSegment."""
    fileobj = io.BytesIO(data)
    reader = dpkt.pcapng.Reader(fileobj) if data[:4] == b"\n\r\r\n" else dpkt.pcap.Reader(fileobj)
    if reader.datalink() != LINKTYPE_ETHERNET:
        raise SystemExit("the dpkt comparison only decodes Ethernet captures")
    return [seg for ts, frame in reader if (seg := dpkt_decode(int(ts * 1e9), frame)) is not None]


def dpkt_decode(ts_ns: int, frame: bytes) -> TcpSegment | None:
    try:
        ip = dpkt.ethernet.Ethernet(frame).data
    except dpkt.UnpackError:
        return None
    if not isinstance(ip, dpkt.ip.IP | dpkt.ip6.IP6) or not isinstance(ip.data, dpkt.tcp.TCP):
        return None
    tcp = ip.data
    family = socket.AF_INET if isinstance(ip, dpkt.ip.IP) else socket.AF_INET6
    return TcpSegment(
        ts_ns,
        socket.inet_ntop(family, ip.src),
        tcp.sport,
        socket.inet_ntop(family, ip.dst),
        tcp.dport,
        tcp.seq,
        tcp.ack,
        tcp.flags,
        tcp.win,
        bytes(tcp.data),
        len(tcp.data),
    )


def timed(label: str, work: Callable[[], int], packets: int, size: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    print(f"  {label:<44} {packets / best:>12,.0f} pkt/s {size / best / 1e6:>9,.1f} MB/s")
    return best


def bench(name: str, data: bytes, path: Path | None, repeat: int) -> None:
    parser = CaptureParser()
    records = [r for r in parser.feed(data) + parser.close() if isinstance(r, CaptureRecord)]
    packets, size = len(records), len(data)
    print(f"{name}: {size / 1e6:.1f} MB, {packets:,} packets")

    def parse_only() -> int:
        p = CaptureParser()
        count = 0
        for start in range(0, len(data), 1 << 20):
            count += len(p.feed(data[start : start + (1 << 20)]))
        return count + len(p.close())

    def whole_source() -> int:
        stats = SourceStats()
        for _ in iter_capture(path if path else io.BytesIO(data), stats=stats):
            pass
        return stats.tcp_segments

    def decode_only() -> int:
        decoder, out, count = PacketDecoder(), [], 0
        for record in records:
            decoder.decode(record, out)
            count += len(out)
            out.clear()
        return count

    def dpkt_decode_only() -> int:
        return sum(dpkt_decode(r.ts_ns, r.data) is not None for r in records)

    timed("push parser (records)", parse_only, packets, size, repeat)
    timed("iter_capture (TcpSegment)", whole_source, packets, size, repeat)
    compare_whole = data[:4] in (b"\xd4\xc3\xb2\xa1", b"\n\r\r\n") and records[0].link_type == LINKTYPE_ETHERNET
    if compare_whole:
        timed("dpkt reader + decode (TcpSegment)", lambda: len(dpkt_segments(data)), packets, size, repeat)
    hand = timed("link/IP/TCP decode, hand-written", decode_only, packets, size, repeat)
    if records[0].link_type == LINKTYPE_ETHERNET:
        slow = timed("link/IP/TCP decode, dpkt", dpkt_decode_only, packets, size, repeat)
        print(f"  hand-written decode is {slow / hand:.1f}x faster than dpkt")


class TiledCapture(io.RawIOBase):
    """A capture of any size that exists only while it is read: the records of
    ``data`` repeated until ``total`` bytes were served."""

    def __init__(self, data: bytes, total: int) -> None:
        self._header, self._body = data[:24], data[24:]
        self._served, self._total = 0, total
        self._pending = memoryview(self._header)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        if not self._pending:
            if self._served >= self._total:
                return 0
            self._pending = memoryview(self._body)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        self._served += size
        return size


def stream(gigabytes: float) -> None:
    """Constant memory: peak RSS before and after streaming a huge capture."""
    data = synthetic_capture(MSS_ETHERNET, 20_000_000)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    stats = SourceStats()
    start = time.perf_counter()
    for _ in iter_capture(TiledCapture(data, int(gigabytes * 1e9)), stats=stats):
        pass
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"streamed {stats.bytes_read / 1e9:.2f} GB, {stats.tcp_segments:,} segments in {elapsed:.0f} s "
        f"({stats.bytes_read / elapsed / 1e6:.0f} MB/s); peak RSS {before / 1024:.0f} MiB before, "
        f"{after / 1024:.0f} MiB after"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, help="a capture to measure instead of the synthetic ones")
    parser.add_argument("--mb", type=int, default=100, help="size of each synthetic capture")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is shown)")
    parser.add_argument("--stream-gb", type=float, default=0, help="also stream this many GB, print peak RSS")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, dpkt {dpkt.__version__}")
    if args.stream_gb:
        stream(args.stream_gb)
    if args.file:
        data = args.file.read_bytes()
        if data[:2] == b"\x1f\x8b":  # measure parsing on the decompressed bytes; iter_capture gunzips
            data = gzip.decompress(data)
        bench(str(args.file), data, args.file, args.repeat)
        return
    for name, mss in (("NIC-shaped (MSS 1448)", MSS_ETHERNET), ("loopback-shaped (MSS 65483)", MSS_LOOPBACK)):
        bench(name, synthetic_capture(mss, args.mb * 1_000_000), None, args.repeat)


if __name__ == "__main__":
    main()
