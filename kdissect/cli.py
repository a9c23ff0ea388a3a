"""Command line: parses arguments and hands off to the library; prints, never decodes itself."""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from . import __version__
from .decoders import DecodeError, decode_request, decode_response
from .render import safe_text, to_jsonable, tree_lines
from .sources.events import CaptureFormatError


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


def _options(args: argparse.Namespace):
    from .connection import Options

    ports = tuple(int(p) for p in args.ports.split(",") if p.strip()) if args.ports else Options().ports
    return Options(ports=ports, auto_detect=not args.no_auto_detect, budget=_budget(args))


def _budget(args: argparse.Namespace):
    """The resource bounds (``kdissect.limits``), with the command line's changes."""
    from .limits import DEFAULT_BUDGET

    cap = getattr(args, "max_decompressed", None)  # (``analyze`` only)
    if cap is None:
        return DEFAULT_BUDGET
    if cap < 1:
        raise UsageError("--max-decompressed takes a number of bytes >= 1")
    return replace(DEFAULT_BUDGET, decompressed_batch=cap)


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


def _record_options(args: argparse.Namespace):
    from .decoders.records import FULL, LENGTHS_ONLY, Limits, Payloads
    from .tables.records import RecordOptions

    limits = Limits(max_decompressed=_budget(args).decompressed_batch)
    if args.no_payloads:
        return RecordOptions(payloads=LENGTHS_ONLY, limits=limits)
    if args.preview is not None:
        if args.preview < 0:
            raise UsageError("--preview takes a number of bytes >= 0")
        return RecordOptions(payloads=Payloads.preview(args.preview), limits=limits)
    return RecordOptions(payloads=FULL, limits=limits)


def _check_readable(paths: list[str]) -> None:
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise UsageError(f"cannot read {p}: no such file")


def _check_something_read(stats, captures: list[str]) -> None:
    """Damage is reported in the output; only a capture with no readable packet at all fails."""
    if stats.packets == 0 and stats.source_anomalies:
        raise UsageError(f"nothing could be read from {', '.join(captures)}")


def _tune_gc() -> None:
    """A run allocates millions of short-lived objects while the tables' rows pile up; the default
    young-generation threshold (700) makes the collector rescan them so often that it took about a
    fifth of a full ``analyze`` (``bench/bench_pipeline.py``). Collect less often, and never rescan
    what the imports made."""
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)


def cmd_analyze(args: argparse.Namespace) -> int:
    from .cli_output import TableWriter, summary_lines
    from .engine import RunStats, iter_events
    from .tables.columns import TABLES
    from .tables.sink import TableSink

    _check_readable(args.captures)
    wanted = [t.strip() for t in args.tables.split(",")] if args.tables else list(TABLES)
    unknown = [t for t in wanted if t not in TABLES]
    if unknown:
        raise UsageError(f"unknown table {unknown[0]!r} (known: {', '.join(TABLES)})")
    _tune_gc()
    # Writing to files, the big tables go out in pieces as they grow: memory stays flat.
    writer = TableWriter(Path(args.out), args.format) if args.out else None
    sink = TableSink(wanted, _record_options(args), spill=writer.write if writer else None, budget=_budget(args))
    stats = RunStats()
    bar, progress = _progress(args.captures)
    if bar is not None:
        bar.start()
    try:
        sink.consume_all(iter_events(args.captures, _options(args), stats=stats, progress=progress))
    finally:
        if bar is not None:
            bar.stop()
    _check_something_read(stats, args.captures)
    tables = {name: sink.columns(name) for name in TABLES if name in wanted or name in ("connections", "anomalies")}
    for line in summary_lines(tables, stats.packets):
        print(line)
    if writer is not None:
        for name in wanted:
            writer.write(name, tables[name])
        for path, rows in writer.close():
            print(f"wrote {path} ({rows:,} rows)")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from .cli_output import exchange_json, exchange_rows, exchange_text
    from .engine import RunStats, iter_events
    from .events import Exchange
    from .filters import FilterError, compile_filter
    from .tables.columns import TABLES

    _check_readable(args.captures)
    _tune_gc()
    predicate = None
    if args.filter:
        try:
            predicate = compile_filter(args.filter, {name for name, _ in TABLES["exchanges"]})
        except FilterError as exc:
            raise UsageError(str(exc)) from None
    stats = RunStats()
    exchanges = (ev for ev in iter_events(args.captures, _options(args), stats=stats) if isinstance(ev, Exchange))
    shown = 0
    for ex, row in exchange_rows(exchanges):
        if predicate is not None and not predicate(row):
            continue
        shown += 1
        if args.json:
            print(exchange_json(ex, row))
        else:
            for line in exchange_text(ex, row, args.full):
                print(line)
    _check_something_read(stats, args.captures)
    if not shown and not args.json:
        print("no matching Kafka exchanges")
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
    return ap


def main(argv: list[str] | None = None) -> int:
    # numpy (which pyarrow loads) starts an OpenBLAS thread per core, and they spin for a while:
    # kdissect does no linear algebra, and on a short run that start-up was a quarter of its CPU time.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
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
