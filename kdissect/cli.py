"""Command line: parses arguments, makes one call into the local engine or the decoders, prints the
report; never decodes or wires stages itself."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from kdissect import __version__
from kdissect.analysis.filters import FilterError
from kdissect.decoders import DecodeError, decode_request, decode_response
from kdissect.decoders.jsonable import to_jsonable
from kdissect.decoders.records import LENGTHS_ONLY, Limits, Payloads
from kdissect.options import Options
from kdissect.report.render import safe_text, tree_lines
from kdissect.sources.shapes import CaptureFormatError


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


def _read_frame(arg: str) -> bytes:
    """A frame given as hex (spaces and colons allowed) or ``@file`` (raw bytes, or hex text)."""
    if arg.startswith("@"):
        path = Path(arg[1:])
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}") from None
        try:
            return bytes.fromhex(raw.decode("ascii").replace(":", " "))
        except (UnicodeDecodeError, ValueError):
            return raw
    try:
        return bytes.fromhex(arg.replace(":", " "))
    except ValueError:
        raise UsageError("the frame must be hex digits, or @FILE") from None


def cmd_decode(args: argparse.Namespace) -> int:
    frame = _read_frame(args.frame)
    if (args.api_key is None) != (args.api_version is None):
        raise UsageError("--api-key and --api-version go together (they select the response's request)")
    is_request = args.api_key is None
    msg = decode_request(frame) if is_request else decode_response(frame, args.api_key, args.api_version)
    if args.json:
        print(json.dumps(to_jsonable(msg), indent=2))
    else:
        for line in tree_lines(msg, limit=None if args.full else 64):
            print(line)
    return 0


def _options(args: argparse.Namespace) -> Options:
    """The run's settings from the command line (record settings only where the command has them)."""
    knobs: dict = {"auto_detect": not args.no_auto_detect}
    if args.ports:
        knobs["ports"] = tuple(int(p) for p in args.ports.split(",") if p.strip())
    if getattr(args, "max_decompressed", None) is not None:
        if args.max_decompressed < 1:
            raise UsageError("--max-decompressed takes a number of bytes >= 1")
        knobs["limits"] = Limits(max_decompressed=args.max_decompressed)
    if getattr(args, "idle_timeout", None) is not None:  # (``live`` only)
        knobs["idle_ns"] = int(args.idle_timeout * 1e9)
    if getattr(args, "no_payloads", False):
        knobs["payloads"] = LENGTHS_ONLY
    elif getattr(args, "preview", None) is not None:
        if args.preview < 0:
            raise UsageError("--preview takes a number of bytes >= 0")
        knobs["payloads"] = Payloads.preview(args.preview)
    return Options(**knobs)


def _progress(paths: list[str]):
    """A rich progress bar on stderr when it is a terminal, else nothing."""
    if not sys.stderr.isatty():
        return None, None
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    total = sum(Path(p).stat().st_size for p in paths)
    bar = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                   TimeRemainingColumn(), transient=True)
    task = bar.add_task("reading", total=total)
    return bar, lambda n: bar.advance(task, n)


def _check_readable(paths: list[str]) -> None:
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise UsageError(f"cannot read {p}: no such file")


def _nothing_read(captures: list[str]) -> UsageError:
    return UsageError(f"nothing could be read from {', '.join(captures)}")


def cmd_analyze(args: argparse.Namespace) -> int:
    from kdissect.engines import local
    from kdissect.report.terminal import summary_lines
    from kdissect.tables.columns import TABLES
    from kdissect.tables.writer import TableWriter

    _check_readable(args.captures)
    wanted = [t.strip() for t in args.tables.split(",")] if args.tables else list(TABLES)
    unknown = [t for t in wanted if t not in TABLES]
    if unknown:
        raise UsageError(f"unknown table {unknown[0]!r} (known: {', '.join(TABLES)})")
    options = _options(args)
    local.tune_gc()
    writer = TableWriter(Path(args.out), args.format) if args.out else None
    bar, progress = _progress(args.captures)
    if bar is not None:
        bar.start()
    try:
        if writer is None:  # the summary alone: only what it shows is built
            run = local.summary(args.captures, options, progress=progress)
        else:
            run = local.analyze(args.captures, options, tables=wanted, writer=writer, progress=progress)
    finally:
        if bar is not None:
            bar.stop()
    if run.stats.nothing_read:
        raise _nothing_read(args.captures)
    for line in summary_lines(run.summary, args.captures):
        print(line)
    for path, rows in run.written:
        print(f"wrote {path} ({rows:,} rows)")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from kdissect.analysis.filters import compile_filter
    from kdissect.engines import local
    from kdissect.report.show import exchange_json, exchange_text
    from kdissect.tables.columns import TABLES

    _check_readable(args.captures)
    options = _options(args)
    local.tune_gc()
    predicate = None
    if args.filter:
        predicate = compile_filter(args.filter, {name for name, _ in TABLES["exchanges"]})
    stats = local.RunStats()
    shown = 0
    for ex, row in local.exchanges(args.captures, options, where=predicate, stats=stats):
        shown += 1
        if args.json:
            print(exchange_json(ex, row))
        else:
            for line in exchange_text(ex, row, args.full):
                print(line)
    if stats.nothing_read:
        raise _nothing_read(args.captures)
    if not shown and not args.json:
        print("no matching Kafka exchanges")
    return 0


def _has_command(name: str) -> bool:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return name in sub.choices


def _live_source(args: argparse.Namespace, ports: tuple[int, ...]):
    """The device (``-i``) or the followed capture stream (``--read``); one-line errors."""
    from kdissect.engines.live import CaptureUnavailable, PcapDevice, capture_filter
    from kdissect.sources.follow import FollowedCapture

    if args.read is not None:
        if args.read != "-" and not Path(args.read).exists():
            raise UsageError(f"cannot read {args.read}: no such file or directory")
        return FollowedCapture(args.read, follow=not args.no_follow), args.read
    bpf = capture_filter(ports if args.port else (), args.bpf)
    try:
        return PcapDevice(args.interface, bpf), f"{args.interface}, filter {bpf!r}"
    except CaptureUnavailable as exc:
        raise UsageError(str(exc)) from None


def cmd_live(args: argparse.Namespace) -> int:
    """Watch a device or a growing capture until Ctrl-C, SIGTERM, --duration or end of input."""
    import time
    from dataclasses import replace

    from kdissect.engines.live import LiveOptions, LiveRun, StopSignals, report_input, run_loop
    from kdissect.engines.local import tune_gc
    from kdissect.report.console import PlainView, RichView, summary_lines
    from kdissect.tables.columns import TABLES
    from kdissect.tables.writer import TableWriter

    wanted = [t.strip() for t in args.tables.split(",")] if args.tables else list(TABLES)
    unknown = [t for t in wanted if t not in TABLES]
    if unknown:
        raise UsageError(f"unknown table {unknown[0]!r} (known: {', '.join(TABLES)})")
    report_from = report_input(args.read, args.write) if args.report else None
    if args.report and not _has_command("report"):
        raise UsageError("--report needs the HTML report builder (`kdissect report`), which this build lacks")
    if args.report and report_from is None:
        raise UsageError("--report is built from the raw packets: add --write FILE.pcapng")
    options = replace(_options(args), ports=tuple(args.port)) if args.port else _options(args)
    source, title = _live_source(args, options.ports)
    metrics = None
    if args.metrics_port is not None:
        from kdissect.engines.live_metrics import LiveMetrics

        metrics = LiveMetrics(args.max_label_values)
        try:
            metrics.serve(args.metrics_port)
        except OSError as exc:
            raise UsageError(f"cannot serve metrics on port {args.metrics_port}: {exc.strerror}") from None
    recorder = None
    if args.write:
        from kdissect.engines.pcapng_out import PcapngRecorder

        recorder = PcapngRecorder(args.write)
    writer = TableWriter(Path(args.out), args.format) if args.out else None
    tune_gc()
    opts = LiveOptions(options, wanted if writer else (), writer.write if writer else None)
    run = LiveRun(opts, recorder=recorder, metrics=metrics)
    view = RichView(title) if sys.stdout.isatty() and not args.quiet else PlainView(args.interval)
    start = time.monotonic()
    with StopSignals(on_second=recorder.flush if recorder else None) as stop:
        try:
            reason = run_loop(source, run, view, stop, duration=args.duration)
        finally:
            view.close()
    for line in summary_lines(run.figures, time.monotonic() - start, reason):
        print(line)
    if recorder is not None:
        print(f"wrote {args.write} ({recorder.packets:,} packets)")
    if writer is not None:
        for path, rows in writer.close():
            print(f"wrote {path} ({rows:,} rows)")
    if args.report:
        sys.stdout.flush()
        return main(["report", str(report_from), "-o", args.report])
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from kdissect.analysis.frames import analysis_frames
    from kdissect.engines import local
    from kdissect.report.build import write_report

    _check_readable(args.captures)
    local.tune_gc()
    run = local.analyze(args.captures, replace(_options(args), payloads=LENGTHS_ONLY))  # sizes are enough
    if run.stats.nothing_read:
        raise _nothing_read(args.captures)
    out = write_report(analysis_frames(run.tables), run.summary, args.captures, Path(args.output), args.format)
    print(f"wrote {safe_text(str(out))} ({out.stat().st_size:,} bytes)")
    return 0


def _capture_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("captures", nargs="+", metavar="CAPTURE", help="pcap/pcapng files (gzip allowed)")
    p.add_argument("--ports", help="comma-separated broker ports (default 9092,9093,9094)")
    p.add_argument("--no-auto-detect", action="store_true", help="only decode the broker ports, no detection")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kdissect", description="Kafka wire-protocol dissector and analyzer.")
    ap.add_argument("--version", action="version", version=f"kdissect {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    d = sub.add_parser("decode", help="decode one Kafka frame given as hex or @file")
    d.add_argument("frame", help="hex bytes (with or without the 4-byte size prefix) or @FILE")
    d.add_argument("--api-key", type=int, help="for a response: the api key of its request")
    d.add_argument("--api-version", type=int, help="for a response: the api version of its request")
    d.add_argument("--json", action="store_true", help="print JSON (bytes as hex, UUIDs as strings)")
    d.add_argument("--full", action="store_true", help="show long byte values in full")
    d.set_defaults(func=cmd_decode)

    a = sub.add_parser("analyze", help="pair every request with its response and write tables")
    _capture_args(a)
    a.add_argument("--out", help="directory to write tables to (DIR/<table>.<ext>)")
    a.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="parquet")
    a.add_argument("--tables", help="comma-separated tables to write (default: all)")
    keep = a.add_mutually_exclusive_group()
    keep.add_argument("--no-payloads", action="store_true", help="records table without keys/values (sizes only)")
    keep.add_argument("--preview", type=int, metavar="N", help="keep only the first N bytes of keys and values")
    a.add_argument("--max-decompressed", type=int, metavar="BYTES",
                   help="cap on one batch's decompressed size (default 64 MiB); beyond it: an anomaly row")
    a.set_defaults(func=cmd_analyze)

    s = sub.add_parser("show", help="print decoded requests with their responses")
    _capture_args(s)
    s.add_argument("--json", action="store_true", help="one JSON object per exchange")
    s.add_argument("--filter", help='expression over exchange columns, e.g. api_name == "Produce" and latency_ms > 100')
    s.add_argument("--full", action="store_true", help="show long byte values in full")
    s.set_defaults(func=cmd_show)

    li = sub.add_parser("live", help="watch a broker or client in real time (a device, or a growing capture)")
    src = li.add_mutually_exclusive_group(required=True)
    src.add_argument("-i", "--interface", help="capture on this interface (libpcap; `any` for all)")
    src.add_argument("--read", metavar="FILE|-",
                     help="a capture being written, a rotated-capture directory, or - (stdin)")
    li.add_argument("--port", type=int, action="append", help="broker port (repeatable); the kernel filter keeps only "
                    "these. Default: 9092-9094 plus auto-detection, which needs every TCP packet")
    li.add_argument("--bpf", help="kernel capture filter instead of the one made from --port")
    li.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    li.add_argument("--write", metavar="FILE.pcapng", help="also write every captured packet to this pcapng file")
    li.add_argument("--out", help="directory to write tables to, in pieces as they grow (DIR/<table>.<ext>)")
    li.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="parquet")
    li.add_argument("--tables", help="comma-separated tables to write (default: all)")
    li.add_argument("--report", metavar="FILE.html", help="at the end, an HTML report of the raw packets (--write)")
    li.add_argument("--metrics-port", type=int, metavar="N", help="serve Prometheus metrics on this port")
    li.add_argument("--max-label-values", type=int, default=100, metavar="N",
                    help="distinct brokers/client ids per metric label before `(other)` (default 100)")
    li.add_argument("--quiet", action="store_true", help="a plain line every --interval seconds, no live table")
    li.add_argument("--interval", type=float, default=10.0, metavar="S", help="seconds between plain lines")
    li.add_argument("--no-follow", action="store_true", help="--read FILE: stop at its current end")
    li.add_argument("--idle-timeout", type=float, default=600.0, metavar="S",
                    help="end connections silent this long (their rows are written; default 600)")
    keep_live = li.add_mutually_exclusive_group()
    keep_live.add_argument("--no-payloads", action="store_true", help="records table without keys/values")
    keep_live.add_argument("--preview", type=int, metavar="N", help="keep only the first N bytes of keys and values")
    li.add_argument("--max-decompressed", type=int, metavar="BYTES", help="cap on one batch's decompressed size")
    li.set_defaults(func=cmd_live, ports=None, no_auto_detect=False)

    r = sub.add_parser("report", help="write a report: latency, errors, groups, lag, transactions, topology, plots")
    _capture_args(r)
    r.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write it, e.g. report.html")
    r.add_argument("--format", choices=("html", "md", "json"), help="default: from FILE's extension, else html")
    r.set_defaults(func=cmd_report)
    return ap


def main(argv: list[str] | None = None) -> int:
    # numpy (which pyarrow loads) starts an OpenBLAS thread per core, and they spin for a while:
    # kdissect does no linear algebra, and on a short run that start-up was a quarter of its CPU time.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, FilterError) as exc:  # a filter may also be refused while it runs (too large a value)
        print(f"kdissect: {safe_text(str(exc))}", file=sys.stderr)
        return 2
    except DecodeError as exc:
        print(f"kdissect: cannot decode: {safe_text(str(exc))}", file=sys.stderr)
        return 1
    except CaptureFormatError as exc:
        print(f"kdissect: {safe_text(str(exc))}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader went away (``kdissect show ... | head``): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 0
    except OSError as exc:
        print(f"kdissect: {safe_text(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
