"""Re-cut a capture's TCP payloads into NIC-sized segments (1448 bytes by default).

Loopback captures carry up to 64 KB per segment; a capture taken on a real NIC sees
1,448-byte segments. Benchmarks run both shapes from one capture.

    python bench/resegment.py IN.pcap OUT.pcap [--mss 1448]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from kdissect.sources.segment import PSH, TcpSegment
from kdissect.sources.files import iter_capture
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--mss", type=int, default=1448)
    args = ap.parse_args()
    segments = [s for s in iter_capture(args.src) if isinstance(s, TcpSegment)]
    frames = segment_frame_list(resegment(segments, args.mss))
    args.dst.write_bytes(pcap_bytes(frames, link_type=1, snaplen=262144, nanosecond=True))
    print(f"{args.src} -> {args.dst}: {len(segments):,} -> {len(frames):,} packets")


if __name__ == "__main__":
    main()
