"""Command line: turns arguments into one request, makes one engine call (``engines.request.run``,
``request.Shown``, ``live.watch`` or ``frame.decode_frame``) and prints its one result; it never
decodes or wires stages itself, and imports no stage's internals (tests/test_architecture.py).

Exit status, defined once here (and in ``--help`` and the README): 0 when the input could be read
(whatever it held), 1 when nothing could be read (no file is a capture, or a frame does not
decode), 2 for a usage error (a bad option value, a missing file); errors are one line on stderr."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from kdissect import __version__, output_paths
from kdissect.engines import EngineSetupError, NothingReadable, RequestError
from kdissect.engines.heap import keep_freed_heap
from kdissect.engines.request import FORMATS, FORMATS_HELP, TABLE_NAMES, FilterError, Request, SparkSettings, run
from kdissect.engines.run import RunResult
from kdissect.lazy import import_without
from kdissect.options import DEFAULT_PORTS, LENGTHS_ONLY, Limits, Options, Payloads
from kdissect.report.render import safe_text, tree_lines

EXIT_OK, EXIT_NOTHING_READ, EXIT_USAGE = 0, 1, 2
EXIT_STATUS_HELP = "exit status: 0 the input was read, 1 nothing could be read, 2 usage error"


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


def _response_hint(arg: str) -> str:
    """How to decode the bytes if they are a response: the key and version a ``--save-frames`` file name
    gives (``c0-7-Metadata-v12-response.bin``), else where to find them."""
    from kdissect.engines.frame import api_key_of

    named = re.search(r"-([A-Za-z]+)-v(\d+)-response\.bin$", arg) if arg.startswith("@") else None
    key = api_key_of(named.group(1)) if named else None
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
    from kdissect.engines.frame import DecodeError, decode_frame, to_jsonable  # the decoders alone: only here

    frame = _read_frame(args.frame)
    if (args.api_key is None) != (args.api_version is None):
        raise UsageError("--api-key and --api-version go together (they select the response's request)")
    try:
        msg = decode_frame(frame, args.api_key, args.api_version)
    except DecodeError as exc:
        if args.api_key is None:
            raise NothingReadable(f"cannot decode as a request: {exc}{_response_hint(args.frame)}") from None
        raise NothingReadable(f"cannot decode: {exc}") from None
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


@contextmanager
def _progress(total: int) -> Iterator[Callable[[int], None] | None]:
    """A rich progress bar on stderr when it is a terminal, else nothing."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    bar = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                   TimeRemainingColumn(), transient=True)
    task = bar.add_task("reading", total=total)
    bar.start()
    try:
        yield lambda n: bar.advance(task, n)
    finally:
        bar.stop()


def _note(line: str) -> None:
    """A one-line note from an engine (a file named twice, a hint), on stderr."""
    print(f"kdissect: {safe_text(line)}", file=sys.stderr)


def _request(args: argparse.Namespace, options: Options, **fields: object) -> Request:
    """The batch run the arguments ask for (``--engine spark``: on Spark)."""
    spark = None
    if getattr(args, "engine", "local") == "spark":
        spark = SparkSettings(args.master, _spark_conf(args), args.verbose)
    return Request(args.captures, options, spark=spark, notify=_note, **fields)  # type: ignore[arg-type]


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


def _report_unreadable(unreadable: list[tuple[str, str]]) -> None:
    """Files skipped because they are not captures (the others were analysed): one line each."""
    for path, why in unreadable:
        print(f"kdissect: skipped {safe_text(why if why.startswith(path) else f'{path}: {why}')}", file=sys.stderr)


def cmd_analyze(args: argparse.Namespace) -> int:
    if args.out is None and (args.format is not None or args.tables is not None):
        raise UsageError("--format and --tables say what --out writes: add --out DIR (or drop them)")
    wanted = _tables(args.tables)
    if args.out is not None:
        _check_directory(args.out, "--out")
    if args.engine == "spark" and (args.format or "parquet") != "parquet":
        raise UsageError("--engine spark writes parquet only")
    if args.engine == "local" and args.out is not None and (args.format or "parquet") == "parquet":
        # This process hands Arrow only buffers and Python values (tables/arrow.py), never numpy arrays
        # to convert, so pyarrow's numpy bridge is not needed: numpy loads only if a table needs it.
        import_without("pyarrow", "numpy")
    request = _request(args, _options(args), tables=wanted, out=args.out, format=args.format or "parquet",
                       progress=_progress)  # fmt: skip
    return _print_run(run(request), args.captures)


def _tables(given: str | None) -> list[str]:
    """``--tables``: comma-separated table names (default: all)."""
    wanted = [t.strip() for t in given.split(",")] if given else list(TABLE_NAMES)
    unknown = [t for t in wanted if t not in TABLE_NAMES]
    if unknown:
        raise UsageError(f"unknown table {unknown[0]!r} (known: {', '.join(TABLE_NAMES)})")
    return wanted


def _readable_args(given: list[str], unreadable: list[tuple[str, str]]) -> list[str]:
    """The captures as the user named them (a directory stays one name), less files just reported
    unreadable: what the summary's ``kdissect report`` hint repeats."""
    skipped = {os.path.normpath(path) for path, _ in unreadable}
    named: dict[str, str] = {}
    for arg in given:  # a name given twice, once
        named.setdefault(os.path.normpath(arg), arg)
    return [arg for norm, arg in named.items() if norm not in skipped]


def _print_run(result: RunResult, given: list[str]) -> int:
    """The files skipped, the summary and the files written, whichever engine ran."""
    from kdissect.report.terminal import summary_lines

    _report_unreadable(result.unreadable)
    assert result.summary is not None
    for line in summary_lines(result.summary, _readable_args(given, result.unreadable)):
        print(line)
    _print_written(result)
    return EXIT_OK


def _print_written(result: RunResult) -> None:
    for path, rows in result.written:
        print(f"wrote {path} ({rows:,} rows)")


def cmd_show(args: argparse.Namespace) -> int:
    from kdissect.engines.request import Shown
    from kdissect.report.show import exchange_json, exchange_text, frame_files

    if args.save_frames is not None:
        _check_directory(args.save_frames, "--save-frames")
    options = replace(_options(args), keep_frames=args.raw or args.save_frames is not None)
    exchanges = Shown(_request(args, options), args.filter)
    save = Path(args.save_frames) if args.save_frames is not None else None
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
    shown = 0
    for ex, row in exchanges:
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
    _report_unreadable(exchanges.stats.unreadable)
    if not shown and not args.json:
        print("no matching Kafka exchanges")
    return 0


def _has_command(name: str) -> bool:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return name in sub.choices


def cmd_live(args: argparse.Namespace) -> int:
    """Watch a device or a growing capture until Ctrl-C, SIGTERM, --duration or end of input."""
    from kdissect.engines.live import LiveRequest, report_input, watch
    from kdissect.engines.run import check_some_capture
    from kdissect.report.console import PlainView, RichView, summary_lines

    wanted = _tables(args.tables)
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
    keylog, args.tls_keylog = args.tls_keylog, None  # followed by the engine, not read once
    options = _options(args)
    request = LiveRequest(args.interface, args.read, not args.no_follow, options,
                          options.ports if args.ports else (), args.bpf, keylog, args.duration, args.write,
                          args.out, args.format, wanted, args.metrics_port, args.metrics_address,
                          args.max_label_values)  # fmt: skip

    def view(title: str) -> PlainView | RichView:
        return RichView(title) if sys.stdout.isatty() and not args.quiet else PlainView(args.interval)

    result = watch(request, view)
    _report_unreadable(result.unreadable)
    check_some_capture(result.stats)
    live = result.live
    assert live is not None
    for line in summary_lines(live.figures, live.elapsed, live.reason):
        print(line)
    if live.packets_written is not None:
        print(f"wrote {args.write} ({live.packets_written:,} packets)")
    _print_written(result)
    if args.report:
        sys.stdout.flush()
        return main(["report", str(report_from), "-o", args.report])
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from kdissect.report.build import format_for, write_report

    output = Path(args.output)
    try:
        fmt = format_for(output, args.format)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _check_file(output, "-o")
    options = replace(_options(args), payloads=LENGTHS_ONLY)  # sizes are enough
    result = run(_request(args, options, report=True))
    _report_unreadable(result.unreadable)
    assert result.frames is not None and result.summary is not None
    out = write_report(result.frames, result.summary, result.inputs, output, fmt, result.figures)
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
                   help=f"comma-separated tables --out writes (default: all): {', '.join(TABLE_NAMES)}")
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
    keep_freed_heap()  # this process is ours: fewer page faults for a run that frees big blocks (engines/heap.py)
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except FilterError as exc:  # also while it runs (too large a value)
        for line in [f"kdissect: --filter: {exc}", *(f"  {line}" for line in exc.pointer())]:
            print(safe_text(line), file=sys.stderr)
        return EXIT_USAGE
    except (UsageError, RequestError, EngineSetupError) as exc:
        print(f"kdissect: {safe_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except NothingReadable as exc:
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
