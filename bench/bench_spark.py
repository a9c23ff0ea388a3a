"""Throughput of the local engine and of ``--engine spark`` on a multi-file corpus, run by hand.

    python bench/make_large_capture.py --megabytes 150 --port 49097     # real client traffic
    python bench/bench_spark.py bench/out/large-150MB.pcap --copies 4 --file-megabytes 25

The corpus is the capture cut into rotated files at record boundaries (as ``tcpdump -C`` does), and
``--copies`` more sets of them with every IP address moved to another subnet (so each copy is other
connections, not retransmissions), to reach a size real traffic takes long to make here. One run
times, each in a fresh process: the local engine, then ``--engine spark`` with ``local[1]``,
and ``local[2]``, all writing every table to Parquet; peak RSS of the driver's Python
process and of its JVM are sampled. Each engine also runs on one small capture: that run's time is
the engine's fixed cost (a JVM and Python workers starting, a dozen Spark jobs), and the corpus
size over the difference is its marginal throughput, the figure that grows with cores. Then, in
one SparkSession, where the time goes: reading (stage 1 alone), the shuffle (stages 1-2 minus 1),
decoding (the decoded pieces minus 1-2), writing and the summary's figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kdissect.sources.files import in_time_order, iter_capture  # noqa: E402
from kdissect.sources.reader import CaptureParser  # noqa: E402
from kdissect.sources.segment import TcpSegment  # noqa: E402
from kdissect.sources.shapes import CaptureRecord  # noqa: E402

MB = 1 << 20
SMALL = HERE.parent / "captures" / "kafka-python-admin.pcap"  # a few KB: what a run costs whatever its input


def rotated_files(capture: Path, out: Path, file_bytes: int, copies: int) -> list[Path]:
    """The capture cut at record boundaries into files of about ``file_bytes``; each extra copy has
    its IPv4 addresses' second byte changed (Ethernet/IPv4 or loopback, checksums are not checked).
    Files are named ``<capture>-copy<N>-part<M>.pcap`` so the cuts of several captures share a folder."""
    data = capture.read_bytes()
    parser = CaptureParser()
    records = [ev for ev in parser.feed(data) + parser.close() if isinstance(ev, CaptureRecord)]
    header, cuts, first = data[:24], [], 0  # cuts: (start byte, end byte, its records)
    for i, record in enumerate(records):
        end = record.offset + 16 + len(record.data)
        start = cuts[-1][1] if cuts else 24
        if end - start >= file_bytes or i == len(records) - 1:
            cuts.append((start, end, records[first : i + 1]))
            first = i + 1
    files = []
    for copy in range(copies + 1):
        for index, (start, end, inside) in enumerate(cuts):
            body = data[start:end] if copy == 0 else _moved(data[start:end], start, inside, copy)
            path = out / f"{capture.stem}-copy{copy}-part{index:04d}.pcap"
            path.write_bytes(header + body)
            files.append(path)
    return files


def _moved(body: bytes, base: int, records: list[CaptureRecord], copy: int) -> bytes:
    """``body`` (``records``, from ``base``) with 127.x.y.z / 10.x.y.z addresses moved to x = 100 + copy."""
    out = bytearray(body)
    for record in records:
        packet = record.offset - base + 16
        ip = packet + (14 if record.link_type == 1 else 4 if record.link_type == 0 else 0)
        if out[ip] >> 4 == 4:
            out[ip + 13] = (100 + copy) & 0xFF
            out[ip + 17] = (100 + copy) & 0xFF
    return bytes(out)


def corpus(captures: list[Path], out: Path, file_bytes: int, copies: int) -> list[Path]:
    """The rotated files of every capture in ``out``; an ``out`` that already holds .pcap files is reused
    as it is (a corpus built once, e.g. /work/benchdata/mixed-1g, serves many runs)."""
    kept = sorted(out.glob("*.pcap"))
    if kept:
        return kept
    out.mkdir(parents=True, exist_ok=True)
    return [path for capture in captures for path in rotated_files(capture, out, file_bytes, copies)]


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        try:
            tasks = list(Path(f"/proc/{todo.pop()}/task").glob("*"))
        except OSError:  # the process ended while its threads were listed
            continue
        for task in tasks:
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _kind(pid: int, driver: int, was: str | None) -> str:
    """Which process a pid is now (``was``: what it was at the last look): the driver's Python, Spark's
    Python daemon and workers (``python -m pyspark.daemon``), or the JVM (with the launcher scripts
    that become it). A worker stays one: an ended worker's command line reads empty, and its CPU
    is its daemon's to count."""
    if pid == driver or was == "workers":
        return was or "driver"
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return was or "jvm"
    if args == [b""]:
        return was or "jvm"
    return "workers" if b"-m" in args[:2] and args[args.index(b"-m") + 1].endswith(b"daemon") else "jvm"


def cpu_s(pid: int, reaped: bool = False, system: bool = False) -> float:
    """User + system CPU seconds of one process so far (its own threads; with ``reaped``, plus its
    children that ended and were waited for); with ``system``, its system (kernel) time alone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[12]) + (int(fields[14]) if reaped else 0)
    if not system:
        ticks += int(fields[11]) + (int(fields[13]) if reaped else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


KINDS = ("driver", "jvm", "workers")
SYSTEM = {kind: f"{kind} system" for kind in KINDS}  # keys of each kind's system time in ``timed``'s CPU


def timed(argv: list[str], code: Path | None = None, every: float | None = None
          ) -> tuple[float, float, float, dict[str, float], str]:  # fmt: skip
    """Wall seconds, peak RSS (MB) of the process and of its JVM, CPU seconds of the process and
    every descendant per kind (``KINDS``: this Python, the JVM, Spark's Python workers; sampled, so a
    last fraction of a second of each is missed) and the system time of each (``SYSTEM``: the kernel's
    part, which the workers' staged pieces raise), stdout (Linux /proc). With ``code``, kdissect is
    imported from that directory; with ``every``, the peaks so far are printed every that many seconds
    (a long run cut short still tells them)."""
    env = None if code is None else {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                            cwd=code)  # fmt: skip
    driver = jvm = 0
    kind_of: dict[int, str] = {}  # (a process's kind may change when it execs: the JVM starts as a fork)
    cpu: dict[int, tuple[float, float]] = {}  # driver and JVM processes: each one's last reading (all, system)
    workers = (0.0, 0.0)  # Spark's Python daemon reaps its workers: the most its live processes have done
    told = start
    while proc.poll() is None:
        if every is not None and time.perf_counter() - told >= every:
            told = time.perf_counter()
            print(f"  {told - start:7.0f} s: peak RSS so far: driver {driver / MB:,.0f} MB, JVM {jvm / MB:,.0f} MB",
                  flush=True)  # fmt: skip
        driver = max(driver, _rss(proc.pid))
        now = (0.0, 0.0)
        for pid in (proc.pid, *_descendants(proc.pid)):
            kind = kind_of[pid] = _kind(pid, proc.pid, kind_of.get(pid))
            if kind == "workers":
                now = (now[0] + cpu_s(pid, reaped=True), now[1] + cpu_s(pid, reaped=True, system=True))
                continue
            cpu[pid] = max(cpu.get(pid, (0.0, 0.0)), (cpu_s(pid), cpu_s(pid, system=True)))
            if kind == "jvm":
                jvm = max(jvm, _rss(pid))
        workers = max(workers, now)
        time.sleep(0.1)
    out = proc.stdout.read() if proc.stdout else ""
    if proc.returncode:
        raise SystemExit(f"{argv} failed ({proc.returncode})")
    kinds = {}
    for kind in KINDS:
        kinds[kind], kinds[SYSTEM[kind]] = (sum(c[i] for pid, c in cpu.items() if kind_of[pid] == kind) for i in (0, 1))
    kinds["workers"], kinds[SYSTEM["workers"]] = workers
    return time.perf_counter() - start, driver / MB, jvm / MB, kinds, out


def _tree_cpu(root: int) -> dict[str, float]:
    """CPU seconds so far per kind (``KINDS``) of ``root`` and its descendants (workers with those their
    daemon reaped)."""
    cpu = dict.fromkeys(KINDS, 0.0)
    for pid in (root, *_descendants(root)):
        kind = _kind(pid, root, None)
        cpu[kind] += cpu_s(pid, reaped=kind == "workers")
    return cpu


def stages(files: list[str], master: str, out: Path) -> dict[str, tuple[float, dict[str, float]]]:
    """Wall and CPU seconds per kind for each stage in one session, after a first job has started the
    JVM and Python workers: the census (which connections cross units), reading (stage 1 alone: with
    the decoding of every connection wholly inside a unit), the shuffle (stages 1-2 minus 1), decoding
    what crossed (the decoded pieces minus census and 1-2), writing and the summary's figures."""
    from kdissect.analysis.summary import Figures
    from kdissect.engines.partition import unit_decoder
    from kdissect.engines.paths import list_captures
    from kdissect.engines.spark import SPLIT_BYTES, by_connection, census, decode, segment_rows
    from kdissect.engines.spark_session import session
    from kdissect.engines.units import plan_units
    from kdissect.options import Options
    from kdissect.tables.columns import TABLES

    spark = session(master)
    marks: list[tuple[float, dict[str, float]]] = []

    def mark() -> None:
        marks.append((time.perf_counter(), _tree_cpu(os.getpid())))

    def noop(frame: object) -> None:
        frame.write.format("noop").mode("overwrite").save()  # type: ignore[attr-defined]

    try:
        found = list_captures(files)
        sizes = dict(found)
        found = [(path, sizes[path]) for path in in_time_order([path for path, _ in found])]
        units = plan_units(found, SPLIT_BYTES)
        parts = max(2, 2 * spark.sparkContext.defaultParallelism)
        own = partial(unit_decoder, files=[p for p, _ in found], options=Options(), tables=list(TABLES),
                      staging=str(out / "_stage1"), figures=Figures, first_task=parts)  # fmt: skip
        noop(segment_rows(spark, units[:1]))  # warm-up
        mark()
        units_found = census(spark, units)
        mark()
        noop(segment_rows(spark, units, units_found, own))
        mark()
        noop(by_connection(segment_rows(spark, units, units_found, own, parts), parts, len(found)))
        mark()
        decoded = decode(spark, files, staging=str(out / "_staging"))
        mark()
        decoded.write(str(out), decoded.tables)
        mark()
        decoded.summary()
        mark()
        decoded.close()
    finally:
        spark.stop()
    (w0, c0), (w1, c1), (w2, c2), (w3, c3), (w4, c4), (w5, c5), (w6, c6) = marks

    def minus(a: tuple[float, dict], b: tuple[float, dict]) -> tuple[float, dict[str, float]]:
        return a[0] - b[0], {k: a[1][k] - b[1][k] for k in KINDS}

    counted = minus((w1, c1), (w0, c0))
    read = minus((w2, c2), (w1, c1))
    both = minus((w3, c3), (w2, c2))
    decoded_all = minus((w4, c4), (w3, c3))
    return {"census": counted, "read": read, "shuffle": minus(both, read),
            "decode": minus(minus(decoded_all, both), counted), "write": minus((w5, c5), (w4, c4)),
            "summary": minus((w6, c6), (w5, c5))}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("captures", type=Path, nargs="+", help="classic pcaps of real traffic (bench/make_large_capture.py)"
                    "; several captures on distinct server ports mix their traffic in one corpus")
    ap.add_argument("--corpus", type=Path, help="keep the rotated files in this folder (built if it holds no .pcap, "
                    "reused as it is otherwise) instead of a temporary one")
    ap.add_argument("--copies", type=int, default=0, help="extra copies of the traffic on other addresses")
    ap.add_argument("--file-megabytes", type=float, default=25, help="size of each rotated file")
    ap.add_argument("--engines", default="local,local[1],local[2]", help="local[*] is local[2] on two cores")
    ap.add_argument("--stages", default="local[2]", help="masters to split the time of into stages")
    ap.add_argument("--baseline", type=Path, help="another version of the code to time beside this one, each "
                    "engine right after this one's run: a directory holding its kdissect/ (e.g. `git archive REV "
                    "kdissect | tar -x -C DIR`, plus the built extension copied in)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        paths = corpus(args.captures, args.corpus or work / "corpus", int(args.file_megabytes * MB), args.copies)
        files = [str(p) for p in paths]
        total = sum(os.path.getsize(p) for p in files) / MB
        firsts = [p for p in paths if "-copy0-" in p.name] or paths
        segments = sum(1 for p in firsts for ev in iter_capture(str(p)) if isinstance(ev, TcpSegment)) * len(paths)
        segments //= len(firsts)
        print(f"corpus: {len(files)} files, {total:,.1f} MB, about {segments:,} TCP segments", flush=True)
        print(f"{'engine':<12} {'wall s':>8} {'MB/s':>8} {'fixed s':>8} {'marginal MB/s':>14} {'driver MB':>10} "
              f"{'JVM MB':>8} {'CPU s':>8} {'cores':>6}  CPU s by process (fixed; corpus (system))")  # fmt: skip
        cli = [sys.executable, "-m", "kdissect.cli", "analyze"]
        versions = [("", None)] + ([("base ", args.baseline.resolve())] if args.baseline else [])
        for engine in filter(None, args.engines.split(",")):
            for label, code in versions:
                out = work / f"out-{engine}"
                extra = [] if engine == "local" else ["--engine", "spark", "--master", engine]
                fixed, _, _, fixed_cpu, _ = timed([*cli, str(SMALL), "--out", str(out), *extra], code)
                shutil.rmtree(out, ignore_errors=True)
                wall, driver, jvm, kinds, _ = timed([*cli, *files, "--out", str(out), *extra], code)
                cpu = sum(kinds[k] for k in KINDS)
                marginal = total / (wall - fixed) if wall > fixed else float("inf")
                split = " ".join(f"{k} {fixed_cpu[k]:.1f};{kinds[k]:.1f} (system {kinds[SYSTEM[k]]:.1f})"
                                 for k in KINDS if kinds[k] or fixed_cpu[k])  # fmt: skip
                print(f"{label + engine:<12} {wall:>8.1f} {total / wall:>8.1f} {fixed:>8.1f} {marginal:>14.1f} "
                      f"{driver:>10.0f} {jvm:>8.0f} {cpu:>8.1f} {cpu / wall:>6.2f}  {split}", flush=True)  # fmt: skip
                shutil.rmtree(out, ignore_errors=True)
        for master in filter(None, args.stages.split(",")):
            for stage, (wall, cpu) in stages(files, master, work / "out-stages").items():
                print(f"{master} {stage:<8} wall {wall:7.1f} s, CPU s " + " ".join(f"{k} {cpu[k]:.1f}" for k in KINDS),
                      flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
