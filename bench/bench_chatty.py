"""kdissect against tshark on chatty traffic (many small requests), side by side in one run.

Jobs, each run ``--runs`` times with the tools alternating, CPU seconds (user + system of the child,
from ``wait4``) reported as medians, so the load other processes put on the machine disturbs the
ratios little:
  exchanges   `kdissect analyze --tables exchanges --out D` vs `tshark -d tcp.port==P,kafka -T fields`
  every table `kdissect analyze --out D` vs `tshark -V`
  summary     `kdissect analyze` (no --out: the terminal summary only); goal: no dearer than exchanges
  live        `kdissect live --read F --no-follow --quiet --out D` (every table); exchanges per CPU-second
  live-lean   the same without ``--out`` (the figures only), with ``--metrics-port`` (the Prometheus series)
With ``--python`` every kdissect job runs a second time with KDISSECT_PURE_PYTHON=1 (the reference path);
with ``--baseline TREE`` also with another source tree of kdissect (e.g. ``git archive main`` unpacked, its
extensions built), for before/after figures from one run. ``--tree TREE`` times that source tree instead of
the installed kdissect (a worktree under test: the children run from a neutral directory).

    python bench/make_chatty_capture.py                       # -> bench/out/chatty-60MB.pcap
    python bench/bench_chatty.py bench/out/chatty-60MB.pcap --port 19400
    python bench/bench_chatty.py bench/out/large-30MB.pcap --port 49099 --jobs exchanges,tables
    python bench/bench_chatty.py bench/out/chatty-60MB.pcap --baseline /tmp/kdissect-main
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_pipeline import byte_compile, count_packets, run  # noqa: E402

JOBS = ("exchanges", "tables", "summary", "live", "live-lean")
METRICS_PORT = 19749  # live-lean's Prometheus endpoint (on 127.0.0.1): pick one nobody else uses


def count_exchanges(path: Path, port: int) -> int:
    """Exchanges in the capture, counted by a child (this process must stay small, see ``run``)."""
    *_, text = run([sys.executable, "-c", (
        "import sys\nfrom kdissect.engines.local import events\n"
        "from kdissect.events import Exchange\nfrom kdissect.options import Options\n"
        "print(sum(isinstance(e, Exchange) for e in events([sys.argv[1]], Options(ports={int(sys.argv[2])}))))"),
        str(path), str(port)], output=True)
    return int(text.strip())


def commands(job: str, path: Path, port: int, tmp: str) -> tuple[list[str], list[str] | None]:
    """kdissect's command for ``job`` and tshark's counterpart (None when tshark has none)."""
    kd = [sys.executable, "-m", "kdissect.cli"]
    tshark = ["tshark", "-r", str(path), "-d", f"tcp.port=={port},kafka"]
    if job == "exchanges":
        return ([*kd, "analyze", str(path), "--ports", str(port), "--tables", "exchanges", "--out", f"{tmp}/ex"],
                [*tshark, "-T", "fields", "-e", "kafka.api_key", "-e", "kafka.correlation_id"])
    if job == "tables":
        return [*kd, "analyze", str(path), "--ports", str(port), "--out", f"{tmp}/all"], [*tshark, "-V"]
    if job == "summary":
        return [*kd, "analyze", str(path), "--ports", str(port)], None
    live = [*kd, "live", "--read", str(path), "--no-follow", "--quiet", "--port", str(port)]
    if job == "live-lean":
        return [*live, "--metrics-port", str(METRICS_PORT)], None
    return [*live, "--out", f"{tmp}/live"], None


def cpu(cmd: list[str], pure: bool = False, tree: Path | None = None) -> float:
    """CPU seconds of kdissect's ``cmd``: on the native path or (``pure``) the Python reference, of the
    installed kdissect or of the source ``tree``."""
    env = {k: v for k, v in os.environ.items() if k not in ("KDISSECT_PURE_PYTHON", "PYTHONPATH")}
    if pure:
        env["KDISSECT_PURE_PYTHON"] = "1"
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return run(cmd, env=env)[1]


def bench(path: Path, port: int, jobs: list[str], runs: int, python: bool, baseline: Path | None,
          tree: Path | None = None) -> list[str]:
    packets, exchanges = count_packets(path), count_exchanges(path, port)
    extra = ("pure Python | " if python else "") + ("baseline | " if baseline else "")
    lines = [f"### {path.name}: {path.stat().st_size / 1e6:.1f} MB, {packets:,} packets, {exchanges:,} exchanges; "
             f"CPU seconds, median of {runs} alternating runs", "",
             f"| job | kdissect | {extra}tshark | tshark ÷ kdissect | exchanges per CPU-s | µs per exchange |",
             "|---|---:|" + "---:|" * extra.count("|") + "---:|---:|---:|---:|"]
    for job in jobs:
        with tempfile.TemporaryDirectory() as tmp:
            ours, theirs = commands(job, path, port, tmp)
            times: dict[str, list[float]] = {"ours": [], "pure": [], "base": [], "theirs": []}
            for _ in range(runs):
                times["ours"].append(cpu(ours, tree=tree))
                if python:
                    times["pure"].append(cpu(ours, pure=True, tree=tree))
                if baseline:
                    times["base"].append(cpu(ours, tree=baseline))
                if theirs is not None:
                    times["theirs"].append(run(theirs)[1])
        med = {k: statistics.median(v) if v else None for k, v in times.items()}
        ratio = f"{med['theirs'] / med['ours']:.2f}×" if med["theirs"] else ""
        pure = (f"{med['pure']:.2f} | " if python else "") + (f"{med['base']:.2f} | " if baseline else "")
        lines.append(f"| {job} | {med['ours']:.2f} | {pure}{med['theirs'] or 0:.2f} | {ratio} | "
                     f"{exchanges / med['ours']:,.0f} | {med['ours'] / exchanges * 1e6:.1f} |")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("captures", nargs="+", type=Path)
    ap.add_argument("--port", type=int, default=19400)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", default=",".join(JOBS), help=f"comma-separated, of {', '.join(JOBS)}")
    ap.add_argument("--python", action="store_true", help="also time the pure-Python reference path")
    ap.add_argument("--baseline", type=Path, help="also time kdissect from this source tree (before/after)")
    ap.add_argument("--tree", type=Path, help="time kdissect from this source tree, not the installed one")
    args = ap.parse_args()
    jobs = args.jobs.split(",")
    if unknown := set(jobs) - set(JOBS):
        raise SystemExit(f"unknown jobs: {', '.join(sorted(unknown))}")
    byte_compile()
    for tree in (args.baseline, args.tree):
        if tree:
            compileall.compile_dir(str(tree / "kdissect"), quiet=1)
    captures = [p.resolve() for p in args.captures]
    # Children run from a neutral directory: ``python -m kdissect`` then imports the installed tree (or
    # --baseline's), never whatever kdissect sits in the current directory.
    os.chdir(tempfile.gettempdir())
    for path in captures:
        print("\n".join(bench(path, args.port, jobs, args.runs, args.python, args.baseline,
                              args.tree and args.tree.resolve())), flush=True)


if __name__ == "__main__":
    main()
