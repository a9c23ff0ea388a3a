"""A copy of a classic pcap capture that lost packets, as a capture taken under load does.

Every packet is dropped with probability ``--loss`` (seeded, so a copy can be made again), keeping the
rest byte for byte. Benchmarks run on such copies to see what a lossy capture costs against the clean one
(``bench/bench_chatty.py`` on both): lost segments cut frames, lose answers and requests (unanswered and
orphan rows), and make the reassembler and the splitter leave and re-enter their common case.

    editcap -F pcap chatty-60MB.pcap chatty.pcap              # pcapng -> classic pcap
    python bench/make_lossy_capture.py chatty.pcap chatty-loss1.pcap --loss 0.01
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
from pathlib import Path

from kdissect.sources.pcap import record_layout


def lossy(data: bytes, loss: float, seed: int) -> tuple[bytes, int, int]:
    """(the capture without the dropped records, records kept, records in all)."""
    layout = record_layout(data[:4])
    if layout is None:
        raise ValueError("not a classic pcap file (convert pcapng with `editcap -F pcap IN OUT`)")
    order, _, header = layout
    rng = random.Random(seed)
    out, at, kept, seen = [data[:24]], 24, 0, 0
    while at + header <= len(data):
        (length,) = struct.unpack_from(f"{order}I", data, at + 8)
        end = min(len(data), at + header + length)
        seen += 1
        if rng.random() >= loss:
            out.append(data[at:end])
            kept += 1
        at = end
    return b"".join(out), kept, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--loss", type=float, default=0.01, help="probability a packet is dropped (default 0.01)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    try:
        data, kept, seen = lossy(args.capture.read_bytes(), args.loss, args.seed)
    except (OSError, ValueError) as exc:
        sys.exit(f"make_lossy_capture: {exc}")
    args.out.write_bytes(data)
    print(f"{args.out}: {kept:,} of {seen:,} packets kept")


if __name__ == "__main__":
    main()
