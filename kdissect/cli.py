"""Command line: parses arguments, makes one call into an engine (local, live or Spark) or the
decoders, prints the report; never decodes or wires stages itself.

Exit status, defined once here (and in ``--help`` and the README): 0 when the input could be read
(whatever it held), 1 when nothing could be read (no file is a capture, or a frame does not
decode), 2 for a usage error (a bad option value, a missing file); errors are one line on stderr."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kdissect import __version__, output_paths
from kdissect.analysis.filters import FilterError
from kdissect.decoders import DecodeError, apis, decode_request, decode_response
from kdissect.decoders.jsonable import to_jsonable
from kdissect.decoders.records import LENGTHS_ONLY, Limits, Payloads
from kdissect.decoders.sasl import redact_frame_body
from kdissect.engines import EngineSetupError
from kdissect.options import DEFAULT_PORTS, Options
from kdissect.report.render import safe_text, tree_lines
from kdissect.sources.shapes import CaptureFormatError

if TYPE_CHECKING:
    from kdissect.analysis.summary import Summary

EXIT_OK, EXIT_NOTHING_READ, EXIT_USAGE = 0, 1, 2
EXIT_STATUS_HELP = "exit status: 0 the input was read, 1 nothing could be read, 2 usage error"


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


class NothingRead(Exception):
    """No input could be read: printed as one line, exit status 1."""


def _response_hint(arg: str) -> str:
    """How to decode the bytes if they are a response: the key and version a ``--save-frames`` file name
    gives (``c0-7-Metadata-v12-response.bin``), else where to find them."""
    named = re.search(r"-([A-Za-z]+)-v(\d+)-response\.bin$", arg) if arg.startswith("@") else None
    try:
        key = apis.key_of(named.group(1)) if named else None
    except LookupError:
        key = None
    if named and key is not None:
        return (f"; the file name says it is a {named.group(1)} v{named.group(2)} response: add "
                f"--api-key {key} --api-version {named.group(2)}")
    return ("; if these are a response's bytes, give its request's --api-key and --api-version (`kdissect show "
            "CAPTURE` prints them for every exchange, e.g. Metadata v12 is --api-key 3 --api-version 12)")


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
    try:
        msg = decode_request(frame) if is_request else decode_response(frame, args.api_key, args.api_version)
    except DecodeError as exc:
        if is_request:
            raise NothingRead(f"cannot decode as a request: {exc}{_response_hint(args.frame)}") from None
        raise NothingRead(f"cannot decode: {exc}") from None
    redact_frame_body(msg["header"].get("request_api_key") if is_request else args.api_key, msg["body"], is_request)
    if args.json:
        print(json.dumps(to_jsonable(msg), indent=2))
    else:
        from kdissect.report.show import display_view

        for line in tree_lines(display_view(msg), limit=None if args.full else 64):
            print(line)
    return 0


def _options(args: argparse.Namespace) -> Options:
    """The run's settings from the command line (record settings only where the command has them)."""
    knobs: dict = {"auto_detect": not args.no_auto_detect}
    if args.ports is not None:
        knobs["ports"] = _ports(args.ports)
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
    if getattr(args, "tls_keylog", None) is not None:
        from kdissect.engines.keylog_file import load_keylog

        keylog = knobs["tls_keylog"] = load_keylog(args.tls_keylog)
        if keylog.junk_lines or not len(keylog):  # counts only: the lines themselves may hold secrets
            print(f"kdissect: {safe_text(args.tls_keylog)}: {len(keylog)} TLS sessions, {keylog.junk_lines} lines "
                  "that are no key log lines (skipped)", file=sys.stderr)
    return Options(**knobs)


def _ports(text: str) -> tuple[int, ...]:
    """``--ports``: comma-separated TCP ports, each 1-65535."""
    ports = []
    for part in (p.strip() for p in text.split(",")):
        if not (part.isascii() and part.isdigit() and 1 <= int(part) <= 65535):
            raise UsageError(f"--ports: {part!r} is not a TCP port (1-65535); e.g. --ports 9092,19092")
        ports.append(int(part))
    return tuple(ports)


def _check_file(path: Path, option: str) -> None:
    _refuse(output_paths.file_problem(path, option))


def _check_directory(out: str, option: str) -> None:
    """A local directory to write into (a URI, which only the Spark engine takes, is Spark's to check)."""
    _refuse(None if "://" in out else output_paths.directory_problem(Path(out), option))


def _refuse(problem: str | None) -> None:
    if problem:
        raise UsageError(problem)


def _progress(paths: list[Path]):
    """A rich progress bar on stderr when it is a terminal, else nothing."""
    if not sys.stderr.isatty():
        return None, None
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    total = _total_size(paths)
    bar = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                   TimeRemainingColumn(), transient=True)
    task = bar.add_task("reading", total=total)
    return bar, lambda n: bar.advance(task, n)


def _captures(args: argparse.Namespace) -> list[Path]:
    """The capture files the arguments name (a directory: the capture files in it)."""
    from kdissect.engines import local

    try:
        captures, repeats = local.distinct_files(local.capture_paths(args.captures))
    except OSError as exc:  # a missing path, or a directory without captures: a bad argument
        raise UsageError(str(exc)) from None
    _report_repeats(repeats)
    return captures


def _report_repeats(repeats: list[tuple[str, str]]) -> None:
    """Files named more than once (read once): one line each."""
    for path, same in repeats:
        print(f"kdissect: {safe_text(path)} is {safe_text(same)} again: read once", file=sys.stderr)


# From this much input on, a Spark cluster is worth suggesting: a Spark run costs ~17 s before any byte
# and decodes ~34 MB/s per core against the local engine's ~80 MB/s, so it overtakes the local engine
# from about 2 GB on 8 cores (bench/bench_spark.py, reports/spark-benchmark-2026-11-24.md).
SPARK_HINT_BYTES = 2 << 30


def _total_size(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths)


def _hint_spark(paths: list[Path]) -> None:
    total = _total_size(paths)
    if total >= SPARK_HINT_BYTES:
        print(f"kdissect: hint: {total / (1 << 20):,.0f} MiB of captures; `--engine spark --master URL` spreads "
              "the work over a Spark cluster", file=sys.stderr)


def _spark_paths(args: argparse.Namespace) -> list[str]:
    """The Spark engine's inputs: as the local engine's, and remote URIs (hdfs://, s3a://) and globs."""
    import glob

    from kdissect.engines import local
    from kdissect.engines.paths import list_captures

    try:
        listed = [path for path, _ in list_captures(args.captures, uris=True)]
    except OSError as exc:  # a missing path, a directory without captures, a file system out of reach
        raise UsageError(str(exc)) from None
    # A local file named twice (a directory and a file in it, a link) is read once, as the local engine reads it.
    local_files = [Path(p) for p in listed if "://" not in p and not glob.has_magic(p)]
    files, repeats = local.distinct_files(local_files)
    _report_repeats(repeats)
    kept = {id(p) for p in files}
    out = iter(local_files)
    return [p for p in listed if "://" in p or glob.has_magic(p) or id(next(out)) in kept]


def _spark_conf(args: argparse.Namespace) -> dict[str, str]:
    """The Spark settings given by ``--conf KEY=VALUE`` and ``--archives``."""
    conf: dict[str, str] = {}
    for setting in args.conf:
        key, sep, value = setting.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf takes KEY=VALUE, not {setting!r}")
        conf[key.strip()] = value
    if args.archives:
        conf["spark.archives"] = ",".join(filter(None, (conf.get("spark.archives"), args.archives)))
    return conf


def _quiet_spark(args: argparse.Namespace) -> None:
    """Unless ``-v``: PySpark's pandas-version warning hidden, before pyspark is imported."""
    if not args.verbose:
        from kdissect.engines.spark_quiet import hide_pandas_warning

        hide_pandas_warning()


def _analyze_spark(args: argparse.Namespace, wanted: list[str], options: Options) -> int:
    _quiet_spark(args)
    from kdissect.engines import local
    from kdissect.engines.spark import analyze

    if (args.format or "parquet") != "parquet":
        raise UsageError("--engine spark writes parquet only")
    captures = _spark_paths(args)
    run = analyze(captures, master=args.master, out=args.out, tables=wanted, options=options, verbose=args.verbose,
                  conf=_spark_conf(args))
    if run.unreadable and len(run.unreadable) == run.files:
        raise local.no_capture(run.unreadable)
    if run.summary.packets == 0 and run.summary.capture.get("anomalies"):
        raise _nothing_read([Path(c) for c in captures])
    _report_unreadable(run.unreadable)
    return _print_run(run.summary, _readable_args(args.captures, run.unreadable), run.written)


def _nothing_read(captures: list[Path]) -> NothingRead:
    return NothingRead(f"nothing could be read from {', '.join(map(str, captures))}")


def _report_unreadable(unreadable: list[tuple[str, str]]) -> None:
    """Files skipped because they are not captures (the others were analysed): one line each."""
    for path, why in unreadable:
        print(f"kdissect: skipped {safe_text(why if why.startswith(path) else f'{path}: {why}')}", file=sys.stderr)


def cmd_analyze(args: argparse.Namespace) -> int:
    from kdissect.engines import local
    from kdissect.tables.columns import TABLES
    from kdissect.tables.writer import TableWriter

    if args.out is None and (args.format is not None or args.tables is not None):
        raise UsageError("--format and --tables say what --out writes: add --out DIR (or drop them)")
    wanted = [t.strip() for t in args.tables.split(",")] if args.tables else list(TABLES)
    unknown = [t for t in wanted if t not in TABLES]
    if unknown:
        raise UsageError(f"unknown table {unknown[0]!r} (known: {', '.join(TABLES)})")
    if args.out is not None:
        _check_directory(args.out, "--out")
    options = _options(args)
    if args.engine == "spark":
        return _analyze_spark(args, wanted, options)
    captures = _captures(args)
    _hint_spark(captures)
    local.tune_gc()
    writer = TableWriter(Path(args.out), args.format or "parquet") if args.out else None
    bar, progress = _progress(captures)
    if bar is not None:
        bar.start()
    try:
        if writer is None:  # the summary alone: only what it shows is built
            run = local.summary(captures, options, progress=progress)
        else:
            run = local.analyze(captures, options, tables=wanted, writer=writer, progress=progress)
    finally:
        if bar is not None:
            bar.stop()
    if run.stats.nothing_read:
        raise _nothing_read(captures)
    _report_unreadable(run.stats.unreadable)
    return _print_run(run.summary, _readable_args(args.captures, run.stats.unreadable), run.written)


def _readable_args(given: list[str], unreadable: list[tuple[str, str]]) -> list[str]:
    """The captures as the user named them (a directory stays one name), less files just reported
    unreadable: what the summary's ``kdissect report`` hint repeats."""
    skipped = {os.path.normpath(path) for path, _ in unreadable}
    named: dict[str, str] = {}
    for arg in given:  # a name given twice, once
        named.setdefault(os.path.normpath(arg), arg)
    return [arg for norm, arg in named.items() if norm not in skipped]


def _print_run(summary: Summary, captures: list[str], written: list[tuple[object, int]]) -> int:
    """The summary and the files written, whichever engine ran."""
    from kdissect.report.terminal import summary_lines

    for line in summary_lines(summary, captures):
        print(line)
    for path, rows in written:
        print(f"wrote {path} ({rows:,} rows)")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from kdissect.analysis.filters import compile_filter
    from kdissect.engines import local
    from kdissect.report.show import exchange_json, exchange_text, frame_files
    from kdissect.tables.columns import TABLES

    if args.save_frames is not None:
        _check_directory(args.save_frames, "--save-frames")
    captures = _captures(args)
    options = replace(_options(args), keep_frames=args.raw or args.save_frames is not None)
    local.tune_gc()
    predicate = None
    if args.filter:
        predicate = compile_filter(args.filter, {**dict(TABLES["exchanges"]), "topics": "list"})
    save = Path(args.save_frames) if args.save_frames is not None else None
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
    stats = local.RunStats()
    shown = 0
    for ex, row in local.exchanges(captures, options, where=predicate, stats=stats, topics=True):
        shown += 1
        if args.json:
            print(exchange_json(ex, row, raw=args.raw))
        else:
            for line in exchange_text(ex, row, args.full, raw=args.raw):
                print(line)
        if save is not None:
            for name, frame in frame_files(ex):
                (save / name).write_bytes(frame)
                if not args.json:
                    print(f"  saved {safe_text(str(save / name))}")
    if stats.nothing_read:
        raise _nothing_read(captures)
    _report_unreadable(stats.unreadable)
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
    bpf = capture_filter(ports if args.ports else (), args.bpf)
    try:
        return PcapDevice(args.interface, bpf), f"{args.interface}, filter {bpf!r}"
    except CaptureUnavailable as exc:
        raise UsageError(str(exc)) from None


def cmd_live(args: argparse.Namespace) -> int:
    """Watch a device or a growing capture until Ctrl-C, SIGTERM, --duration or end of input."""
    import time

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
    for path, option in ((args.write, "--write"), (args.report, "--report")):
        if path:
            _check_file(Path(path), option)
    if args.out:
        _check_directory(args.out, "--out")
    if args.port:  # ``--port P`` (repeatable), the spelling before ``--ports P,P``
        args.ports = ",".join([*filter(None, [args.ports]), *map(str, args.port)])
    keylog_path, args.tls_keylog = args.tls_keylog, None  # followed below, not read once
    options = _options(args)
    keys = None
    if keylog_path is not None:  # clients append to it as they connect (it may not exist yet): read on
        from kdissect.engines.keylog_file import KeyLogFile

        keys = KeyLogFile(keylog_path)
        keys.follow()
        options = replace(options, tls_keylog=keys.keylog)
    source, title = _live_source(args, options.ports)
    metrics = None
    if args.metrics_port is not None:
        from kdissect.engines.live_metrics import LiveMetrics

        metrics = LiveMetrics(args.max_label_values)
        try:
            metrics.serve(args.metrics_port, args.metrics_address)
        except OSError as exc:
            raise UsageError(f"cannot serve metrics on {args.metrics_address} port {args.metrics_port}: "
                             f"{exc.strerror}") from None
    recorder = None
    if args.write:
        from kdissect.engines.pcapng_out import PcapngRecorder

        recorder = PcapngRecorder(args.write)
    writer = TableWriter(Path(args.out), args.format) if args.out else None
    tune_gc()
    opts = LiveOptions(options, wanted if writer else (), writer.write if writer else None,
                       several_inputs=bool(args.read) and Path(args.read).is_dir())
    run = LiveRun(opts, recorder=recorder, metrics=metrics)
    view = RichView(title) if sys.stdout.isatty() and not args.quiet else PlainView(args.interval)
    start = time.monotonic()
    with StopSignals(on_second=recorder.flush if recorder else None) as stop:
        try:
            reason = run_loop(source, run, view, stop, duration=args.duration, keys=keys.follow if keys else None)
        finally:
            view.close()
    skipped = getattr(source, "skipped", [])
    _report_unreadable(skipped)
    if skipped and len(skipped) == len(source.files_read):
        from kdissect.engines import local

        raise local.no_capture(skipped)
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

    from kdissect.analysis.frames import taken_frames
    from kdissect.analysis.report_figures import ReportFigures
    from kdissect.engines import local
    from kdissect.report.build import format_for, write_report

    output = Path(args.output)
    try:
        fmt = format_for(output, args.format)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _check_file(output, "-o")
    options = replace(_options(args), payloads=LENGTHS_ONLY)  # sizes are enough
    if args.engine == "spark":
        _quiet_spark(args)
        from kdissect.engines.spark import report_input

        names = _spark_paths(args)
        spark = report_input(names, master=args.master, options=options, verbose=args.verbose,
                             conf=_spark_conf(args))
        if spark.unreadable and len(spark.unreadable) == spark.files:
            raise local.no_capture(spark.unreadable)
        frames, summary, unreadable, figures = spark.frames, spark.summary, spark.unreadable, spark.figures
    else:
        captures = _captures(args)
        names = [str(c) for c in captures]
        local.tune_gc()
        figures = ReportFigures(keep_records=True)
        run = local.analyze(captures, options, figures=figures, counted_only=figures.counted_only)
        if run.stats.nothing_read:
            raise _nothing_read(captures)
        tables, summary, unreadable = {**run.tables, "records": figures.records}, run.summary, run.stats.unreadable
        del run  # the tables' column lists are freed one by one as they become frames
        frames = taken_frames(tables)
    _report_unreadable(unreadable)
    out = write_report(frames, summary, names, output, fmt, figures)
    print(f"wrote {safe_text(str(out))} ({out.stat().st_size:,} bytes)")
    return 0


def _engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=("local", "spark"), default="local",
                   help="local: this process (default); spark: PySpark, captures may also be globs and URIs")
    p.add_argument("--master", default="local[*]", help="Spark master URL for --engine spark (default: local[*])")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="with --engine spark: also show Spark's log, progress bars and PySpark's warnings "
                        "(default: errors only)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting for --engine spark, as spark-submit's (repeatable), e.g. "
                        "spark.executor.memory=4g or spark.pyspark.python=./kd/bin/python (default: none; "
                        "kdissect's own: driver memory 2g, web UI off)")
    p.add_argument("--archives", metavar="ARCHIVE#NAME,...",
                   help="archives Spark unpacks on every executor (spark.archives), e.g. a packed environment "
                        "holding kdissect: kd.tar.gz#kd with --conf spark.pyspark.python=./kd/bin/python "
                        "(default: none)")


def _tls_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tls-keylog", metavar="FILE",
                   help="decrypt TLS with this key log (NSS format, what SSLKEYLOGFILE writes; default: none, "
                        "only the capture's own pcapng Decryption Secrets Blocks). Keys are never shown")  # fmt: skip


def _capture_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("captures", nargs="+", metavar="CAPTURE",
                   help="pcap or pcapng files, gzip allowed; a directory means the capture files in it "
                        "(*.pcap, *.pcapng, *.cap, and .gz of them). Several files are read as one capture")
    p.add_argument("--ports", metavar="P,P,...",
                   help=f"comma-separated broker ports (default: {','.join(map(str, DEFAULT_PORTS))})")
    p.add_argument("--no-auto-detect", action="store_true",
                   help="decode only connections with an endpoint on --ports (default: also any other TCP "
                        "connection whose bytes decode as Kafka requests)")


FILTER_HELP = """filter (--filter EXPR): a Python-like expression over one exchange, true to show it.
  columns: the exchanges table's (docs/tables-and-columns.md), e.g. api_name, api_version, correlation_id,
           client_id, client_ip, broker_port, status, error_name, latency_ms, request_bytes,
           request_ts, response_ts; and topics (the topic names the request and response name)
  operators: == != < <= > >= in, not in, is None, and or not, + - * / %, (...), [...] lists
  strings in quotes; a missing value (None) compares false except with ==, != and is.
  kinds: a column compares only with values of its kind (latency_ms > "5" is an error: numbers,
         text, times, true/false), and an error points at the place with a caret.
  time: request_ts and response_ts compare with ISO strings ("2026-08-22T10:15:00Z"; no zone
        means UTC), so a time window is  request_ts >= "..." and request_ts < "..."
  examples:
    --filter 'api_name == "Produce" and latency_ms > 100'
    --filter '"payments" in topics and status != "ok"'
    --filter 'request_ts >= "2026-08-22T10:15:00" and request_ts < "2026-08-22T10:16:00"'
"""


def build_parser() -> argparse.ArgumentParser:
    from kdissect.tables.columns import TABLES
    from kdissect.tables.writer import FORMATS, FORMATS_HELP

    ap = argparse.ArgumentParser(prog="kdissect", description="Kafka wire-protocol dissector and analyzer.",
                                 epilog=EXIT_STATUS_HELP)
    ap.add_argument("--version", action="version", version=f"kdissect {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    d = sub.add_parser("decode", help="decode one Kafka frame given as hex or @file", epilog=EXIT_STATUS_HELP)
    d.add_argument("frame", help="hex bytes (with or without the 4-byte size prefix) or @FILE (raw bytes or hex; "
                                 "`kdissect show CAPTURE --save-frames DIR` writes such files)")
    d.add_argument("--api-key", type=int, help="for a response: the api key of its request (default: the bytes "
                                               "are a request)")
    d.add_argument("--api-version", type=int, help="for a response: the api version of its request")
    d.add_argument("--json", action="store_true", help="print JSON (bytes as hex, UUIDs as strings; default: a tree)")
    d.add_argument("--full", action="store_true", help="show long byte values in full (default: first 64 bytes)")
    d.set_defaults(func=cmd_decode)

    a = sub.add_parser("analyze", help="pair every request with its response and write tables",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=f"{FORMATS_HELP}\n{EXIT_STATUS_HELP}")
    _capture_args(a)
    a.add_argument("--out", metavar="DIR", help="directory to write tables to, DIR/<table>.<format> "
                                                "(default: none, print the summary only)")
    a.add_argument("--format", choices=FORMATS, help="file format of the tables --out writes (default: parquet)")
    a.add_argument("--tables", metavar="T,T,...",
                   help=f"comma-separated tables --out writes (default: all): {', '.join(TABLES)}")
    keep = a.add_mutually_exclusive_group()
    keep.add_argument("--no-payloads", action="store_true",
                      help="records table without keys, values and header values: null, sizes only "
                           "(default: kept whole)")
    keep.add_argument("--preview", type=int, metavar="N", help="keep only the first N bytes of keys and values "
                                                               "(default: kept whole)")
    a.add_argument("--max-decompressed", type=int, metavar="BYTES",
                   help="cap on one record batch's decompressed size (default: 67108864, 64 MiB); beyond it: an "
                        "anomaly row")
    _engine_args(a)
    _tls_args(a)
    a.set_defaults(func=cmd_analyze)

    s = sub.add_parser("show", help="print decoded requests with their responses",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=f"{FILTER_HELP}\n{EXIT_STATUS_HELP}")
    _capture_args(s)
    s.add_argument("--json", action="store_true", help="one JSON object per exchange (default: an indented tree)")
    s.add_argument("--filter", metavar="EXPR", help='which exchanges to show (default: all), e.g. '
                                                   'api_name == "Produce" and latency_ms > 100; see below')
    s.add_argument("--full", action="store_true", help="show long byte values in full (default: first 64 bytes)")
    s.add_argument("--raw", action="store_true", help="also print each frame's bytes as hex, size prefix included "
                                                      "(default: only those of frames that did not decode)")
    s.add_argument("--save-frames", metavar="DIR",
                   help="write each shown frame to DIR/c<connection>-<correlation id>-<request|response>.bin "
                        "(size prefix included), for `kdissect decode @FILE` (default: none)")
    _tls_args(s)
    s.set_defaults(func=cmd_show)

    li = sub.add_parser("live", help="watch a broker or client in real time (a device, or a growing capture)")
    src = li.add_mutually_exclusive_group(required=True)
    src.add_argument("-i", "--interface", help="capture on this interface (libpcap; `any` for all; default: "
                                               "none, give -i or --read)")
    src.add_argument("--read", metavar="FILE|-",
                     help="a capture being written, a rotated-capture directory, or - (stdin) (default: none)")
    li.add_argument("--ports", metavar="P,P,...", help="comma-separated broker ports; the kernel filter keeps only "
                    "these (default: 9092-9094 plus auto-detection, which needs every TCP packet)")
    li.add_argument("--port", type=int, action="append", help=argparse.SUPPRESS)  # the old spelling, still taken
    li.add_argument("--bpf", help="kernel capture filter instead of the one made from --ports (default: made from "
                                  "--ports)")
    li.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: until Ctrl-C)")
    li.add_argument("--write", metavar="FILE.pcapng", help="also write every captured packet to this pcapng file "
                                                          "(default: none)")
    li.add_argument("--out", help="directory to write tables to, in pieces as they grow (DIR/<table>.<ext>; "
                                  "default: none)")
    li.add_argument("--format", choices=FORMATS, default="parquet", help="file format of --out (default: parquet)")
    li.add_argument("--tables", help="comma-separated tables to write (default: all)")
    li.add_argument("--report", metavar="FILE.html", help="at the end, an HTML report of the raw packets (--write; "
                                                         "default: none)")
    li.add_argument("--metrics-port", type=int, metavar="N", help="serve Prometheus metrics on this port "
                                                                 "(default: none)")
    li.add_argument("--metrics-address", default="127.0.0.1", metavar="ADDR",
                    help="address the metrics endpoint listens on (default: 127.0.0.1, this host only; its labels "
                         "hold client ids and broker addresses; 0.0.0.0 opens it to every network)")
    li.add_argument("--max-label-values", type=int, default=100, metavar="N",
                    help="distinct brokers/client ids per metric label before `(other)` (default 100)")
    li.add_argument("--quiet", action="store_true", help="a plain line every --interval seconds, no live table "
                                                         "(default: a live table on a terminal)")
    li.add_argument("--interval", type=float, default=10.0, metavar="S", help="seconds between plain lines "
                                                                             "(default 10)")
    li.add_argument("--no-follow", action="store_true", help="--read FILE: stop at its current end (default: "
                                                             "follow it as it grows)")
    li.add_argument("--idle-timeout", type=float, default=600.0, metavar="S",
                    help="end connections silent this long (their rows are written; default 600)")
    keep_live = li.add_mutually_exclusive_group()
    keep_live.add_argument("--no-payloads", action="store_true", help="records table without keys/values: null "
                                                                      "(default: kept whole)")
    keep_live.add_argument("--preview", type=int, metavar="N", help="keep only the first N bytes of keys and values "
                                                                    "(default: kept whole)")
    li.add_argument("--max-decompressed", type=int, metavar="BYTES", help="cap on one batch's decompressed size "
                                                                         "(default: 64 MiB)")
    _tls_args(li)
    li.set_defaults(func=cmd_live, no_auto_detect=False)

    r = sub.add_parser("report", help="write a report: latency, errors, groups, lag, transactions, topology, plots")
    _capture_args(r)
    r.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write it, e.g. report.html "
                                                                         "(required; no default)")
    r.add_argument("--format", choices=("html", "md", "json"), help="default: from FILE's extension, else html")
    _engine_args(r)
    _tls_args(r)
    r.set_defaults(func=cmd_report)
    return ap


def main(argv: list[str] | None = None) -> int:
    # numpy (which pyarrow loads) starts an OpenBLAS thread per core, and they spin for a while:
    # kdissect does no linear algebra, and on a short run that start-up was a quarter of its CPU time.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except FilterError as exc:  # also while it runs (too large a value)
        for line in [f"kdissect: --filter: {exc}", *(f"  {line}" for line in exc.pointer())]:
            print(safe_text(line), file=sys.stderr)
        return EXIT_USAGE
    except (UsageError, EngineSetupError) as exc:
        print(f"kdissect: {safe_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except (NothingRead, CaptureFormatError) as exc:
        print(f"kdissect: {safe_text(str(exc))}", file=sys.stderr)
        return EXIT_NOTHING_READ
    except BrokenPipeError:  # the reader went away (``kdissect show ... | head``): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return EXIT_OK
    except OSError as exc:
        print(f"kdissect: {safe_text(str(exc))}", file=sys.stderr)
        return EXIT_NOTHING_READ
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
