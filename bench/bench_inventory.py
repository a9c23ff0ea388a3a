"""The report's client inventory against the number of distinct clients (issue #20).

A fleet capture holds hundreds of thousands of (client id, host) pairs. This bench builds captures of
25k, 100k and 400k distinct client addresses (one short real kcat connection replayed from a new
address each time, kdissect.testing.replay), then runs, side by side in one process tree,
``kdissect analyze`` (summary only) and ``kdissect report`` (JSON) on each, and prints each one's
CPU seconds and peak memory (children's getrusage). The report must stay near analyze's time and
under 1 GB. ``--tables-only`` times just :func:`kdissect.analysis.clients.inventory` on the tables.

    python bench/bench_inventory.py                      # 25k, 100k, 400k
    python bench/bench_inventory.py --clients 25000      # one size

The machine is shared: read the ratios (report / analyze), not the absolute seconds.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

from kdissect.testing.pcapwrite import ETHERNET, pcap_bytes, segment_frame_list
from kdissect.testing.replay import replay
from kdissect.testing.shapes import segments_of

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
SOURCE = HERE.parent / "captures" / "kcat-apiversions-loop.pcap"
BROKER_PORT = 9092
PCAP_HEADER = 24
KDISSECT = str(Path(sys.executable).with_name("kdissect"))  # the venv's command
CHUNK = 5_000  # rounds written per chunk: memory stays flat whatever the size


def one_connection() -> list:
    """The first connection of the kcat capture (ApiVersions and Metadata, about ten segments)."""
    segs = segments_of(SOURCE.read_bytes())
    ends = {(segs[0].src_ip, segs[0].src_port), (segs[0].dst_ip, segs[0].dst_port)}
    return [s for s in segs if {(s.src_ip, s.src_port), (s.dst_ip, s.dst_port)} == ends]


def make_capture(clients: int, folder: Path = OUT) -> Path:
    """A pcap of ``clients`` connections, each from its own address (kept in ``folder`` for reuse)."""
    path = folder / f"inventory-{clients}.pcap"
    if path.exists():
        return path
    folder.mkdir(exist_ok=True)
    conn = one_connection()
    stream = replay(conn, {BROKER_PORT}, clients)
    with path.open("wb") as out:
        for start in range(0, clients, CHUNK):
            chunk = [next(stream) for _ in range(len(conn) * min(CHUNK, clients - start))]
            data = pcap_bytes(segment_frame_list(chunk, ETHERNET), link_type=ETHERNET.link_type)
            out.write(data if start == 0 else data[PCAP_HEADER:])
    return path


def run(argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one kdissect command in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([KDISSECT, *argv], check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024  # ru_maxrss: the largest child so far, in kB


def tables_only(capture: Path) -> tuple[int, float]:
    """(rows, CPU s) of the inventory alone, on the capture's tables."""
    from kdissect.analysis.clients import inventory
    from kdissect.analysis.frames import analysis_frames
    from kdissect.decoders.apis import removed_version
    from kdissect.engines import local

    tables = analysis_frames(local.analyze([capture]).tables)
    start = time.process_time()
    rows = len(inventory(tables, removed_version))
    return rows, time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, action="append", help="distinct client addresses (repeatable; "
                                                                 "default 25000, 100000, 400000)")
    ap.add_argument("--tables-only", action="store_true", help="time the inventory alone, in this process")
    args = ap.parse_args()
    for clients in args.clients or [25_000, 100_000, 400_000]:
        capture = make_capture(clients)
        if args.tables_only:
            rows, cpu = tables_only(capture)
            print(f"{clients:>7} clients: inventory of {rows:,} rows in {cpu:.2f} CPU s")
            continue
        report = OUT / f"inventory-{clients}.json"
        a_wall, a_cpu, _ = run(["analyze", str(capture)])
        r_wall, r_cpu, r_rss = run(["report", str(capture), "-o", str(report)])
        print(
            f"{clients:>7} clients: analyze {a_cpu:.1f} CPU s ({a_wall:.1f} s wall); report {r_cpu:.1f} CPU s "
            f"({r_wall:.1f} s wall), peak {r_rss:,.0f} MB; report/analyze CPU {r_cpu / a_cpu:.2f}x"
        )


if __name__ == "__main__":
    main()
