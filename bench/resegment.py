"""Re-cut a capture's TCP payloads into NIC-sized segments (1448 bytes by default).

Loopback captures carry up to 64 KB per segment; a capture taken on a real NIC sees
1,448-byte segments. Benchmarks run both shapes from one capture.

``--repeat N --port P`` also writes N copies of the traffic one after the other, each copy's
client ports moved so its connections stay apart: a larger real-traffic input when the large
capture (bench/make_large_capture.py, which needs a broker) cannot be made.

    python bench/resegment.py IN.pcap OUT.pcap [--mss 1448] [--repeat N --port P]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from kdissect.sources.files import iter_capture
from kdissect.sources.segment import PSH, TcpSegment
from kdissect.testing.pcapwrite import pcap_bytes, segment_frame_list


def resegment(segments: list[TcpSegment], mss: int) -> list[TcpSegment]:
    out: list[TcpSegment] = []
    for seg in segments:
        if len(seg.payload) <= mss:
            out.append(seg)
            continue
        for i in range(0, len(seg.payload), mss):
            piece = seg.payload[i : i + mss]
            last = i + mss >= len(seg.payload)
            out.append(replace(seg, seq=(seg.seq + i) & 0xFFFFFFFF, payload=piece, payload_len=len(piece),
                               flags=seg.flags if last else seg.flags & ~PSH))
    return out


def repeat(segments: list[TcpSegment], times: int, broker_port: int) -> list[TcpSegment]:
    """``times`` copies of the segments, later copies shifted in time and on other client ports."""
    if not segments or times <= 1:
        return segments
    span = segments[-1].ts_ns - segments[0].ts_ns + 1_000_000_000

    def moved(port: int, k: int) -> int:
        return port if port == broker_port else 1024 + (port - 1024 + k * 1009) % 64000

    return [replace(s, ts_ns=s.ts_ns + k * span, src_port=moved(s.src_port, k), dst_port=moved(s.dst_port, k))
            for k in range(times) for s in segments]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--mss", type=int, default=1448)
    ap.add_argument("--repeat", type=int, default=1, help="copies of the traffic, one after the other")
    ap.add_argument("--port", type=int, default=9092, help="the broker port (kept in every copy)")
    args = ap.parse_args()
    segments = repeat([s for s in iter_capture(args.src) if isinstance(s, TcpSegment)], args.repeat, args.port)
    frames = segment_frame_list(resegment(segments, args.mss))
    args.dst.write_bytes(pcap_bytes(frames, link_type=1, snaplen=262144, nanosecond=True))
    print(f"{args.src} -> {args.dst}: {len(segments):,} -> {len(frames):,} packets")


if __name__ == "__main__":
    main()
