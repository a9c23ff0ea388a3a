"""kdissect against tshark on the same capture files, side by side in one run.

For each capture (as given, and re-cut to 1448-byte segments like a NIC capture):
  1. exchanges only: `kdissect analyze --tables exchanges` vs
     `tshark -r F -d tcp.port==P,kafka -T fields -e kafka.api_key -e kafka.correlation_id`
  2. everything:     `kdissect analyze` (all tables, records decoded, payloads kept) vs `tshark -V`
  3. everything with `--no-payloads` (kdissect only): the memory bound for any capture size
Prints wall and CPU time, MB/s, packets/s, records/s, peak RSS and the speed ratios (wall, and CPU,
which a busy machine disturbs less). MB/s, packets/s and records/s are per wall second.

    python bench/bench_pipeline.py CAPTURE [CAPTURE ...] --port 49092
Make a large capture first: `python bench/make_large_capture.py --megabytes 60`.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(cmd: list[str], output: bool = False, env: dict[str, str] | None = None) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds, peak RSS (KiB) and (with ``output``) stdout of a child process
    (run with ``env`` when given).

    Output is read back only when asked: this process must stay small, because Linux reports a
    child's peak RSS as at least its parent's at the time it was spawned (`tshark -V` writes
    hundreds of MB)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        out.seek(0)
        text = out.read().decode(errors="replace") if output else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({status}): {' '.join(cmd)}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, text


def count_packets(path: Path) -> int:
    *_, text = run([sys.executable, "-c", (
        "import sys\nfrom kdissect.sources.files import iter_capture\nfrom kdissect.sources.shapes import SourceStats\n"
        "s=SourceStats()\nfor _ in iter_capture(sys.argv[1], stats=s): pass\nprint(s.packets)"), str(path)],
        output=True)
    return int(text.strip())


def count_records(out_dir: Path) -> int:
    """Rows of the records table, read in a child (this process must stay small, see ``run``)."""
    path = out_dir / "records.parquet"
    if not path.exists():
        return 0
    *_, text = run([sys.executable, "-c", "import sys, pyarrow.parquet as pq\n"
                    "print(pq.ParquetFile(sys.argv[1]).metadata.num_rows)", str(path)], output=True)
    return int(text.strip())


def bench(path: Path, port: int) -> list[str]:
    size_mb = path.stat().st_size / 1e6
    packets = count_packets(path)
    kd = [sys.executable, "-m", "kdissect.cli", "analyze", str(path), "--ports", str(port)]
    lines = [f"### {path.name}: {size_mb:.1f} MB, {packets:,} packets", "",
             "| job | tool | wall s | CPU s | MB/s | packets/s | records/s | peak RSS MB | speed-up (wall) | (CPU) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [
            ("exchanges", [*kd, "--tables", "exchanges", "--out", f"{tmp}/ex"],
             ["tshark", "-r", str(path), "-d", f"tcp.port=={port},kafka", "-T", "fields", "-e", "kafka.api_key",
              "-e", "kafka.correlation_id"]),
            ("full", [*kd, "--out", f"{tmp}/full"], ["tshark", "-r", str(path), "-d", f"tcp.port=={port},kafka", "-V"]),
            ("full --no-payloads", [*kd, "--no-payloads", "--out", f"{tmp}/lean"], None),
        ]
        for job, ours, theirs in jobs:
            results = [("kdissect", *run(ours)[:3])]
            if theirs is not None:
                results.append(("tshark", *run(theirs)[:3]))
            records = count_records(Path(tmp) / "full") if job.startswith("full") else 0
            for tool, t, cpu, rss in results:
                rec = f"{records / t:,.0f}" if records and tool == "kdissect" else "-"
                ratios = "| |"
                if tool == "kdissect" and len(results) == 2:
                    ratios = f"| {results[1][1] / t:.2f}x | {results[1][2] / cpu:.2f}x |"
                lines.append(f"| {job} | {tool} | {t:.2f} | {cpu:.2f} | {size_mb / t:.1f} | {packets / t:,.0f} | "
                             f"{rec} | {rss / 1024:.0f} {ratios}")
    return lines


def byte_compile() -> None:
    """Byte-compile kdissect as ``pip install`` does, so no run pays for compiling its sources
    (an editable install under PYTHONDONTWRITEBYTECODE would pay it every time, about 0.1 s)."""
    spec = importlib.util.find_spec("kdissect")  # located, not imported: this process must stay small
    assert spec is not None and spec.submodule_search_locations
    compileall.compile_dir(spec.submodule_search_locations[0], quiet=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("captures", nargs="+", type=Path)
    ap.add_argument("--port", type=int, default=9092)
    ap.add_argument("--no-resegment", action="store_true", help="skip the 1448-byte-segment variant")
    args = ap.parse_args()
    byte_compile()
    for path in args.captures:
        print("\n".join(bench(path, args.port)), flush=True)
        if not args.no_resegment:
            with tempfile.TemporaryDirectory() as tmp:
                nic = Path(tmp) / f"{path.stem}-1448.pcap"
                subprocess.run([sys.executable, str(HERE / "resegment.py"), str(path), str(nic)], check=True,
                               stdout=subprocess.DEVNULL)
                print("\n" + "\n".join(bench(nic, args.port)), flush=True)


if __name__ == "__main__":
    main()
