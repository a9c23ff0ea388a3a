"""The live engine: a capture device (libpcap) or a growing capture stream -> the core -> figures,
tables, metrics and a raw copy, until Ctrl-C, SIGTERM, ``--duration`` or the end of the input.

The only module that opens a capture device. It feeds the same core as the local engine, a poll's
records at a time: :class:`~kdissect.sources.packets.PacketDecoder` (native for runs of common records) ->
:class:`~kdissect.kafka.pipeline.KafkaPipeline` -> :class:`~kdissect.tables.sink.TableSink` and
:class:`~kdissect.analysis.rolling.RollingFigures`. Memory stays bounded on a run of days:
connections silent for ``options.idle_ns`` of capture time end (open requests become
``unanswered``, their row is written), the core caps every per-connection buffer, figures roll
over, and with ``--out`` every table is written in pieces of ``options.spill_rows`` rows.

libpcap is reached through scapy's ctypes binding (``scapy.libs.winpcapy``, imported only when a
device is opened); the packets are read by ``engines/_capture.c`` a batch per call, through the
address of the binding's own ``pcap_next_ex`` (the ctypes path, about 2 µs per packet, is the
reference and the fallback).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import Any, Protocol

from kdissect.analysis.rolling import RollingFigures
from kdissect.dataclass import dataclass
from kdissect.engines import NothingReadable, RequestError
from kdissect.engines.live_exchanges import ExchangeReader
from kdissect.engines.local import feed_item, feed_items, tune_gc
from kdissect.engines.run import LiveOutcome, RunResult, RunStats, TableRun
from kdissect.events import Anomaly, ConnectionSummary, Exchange, ExchangeRows, KafkaEvent
from kdissect.kafka.pipeline import KafkaPipeline
from kdissect.native import native_module
from kdissect.options import Options
from kdissect.sources.native_records import NativeRecords
from kdissect.sources.packets import PacketDecoder, SegmentEvent
from kdissect.sources.segment import TcpSegment
from kdissect.sources.shapes import CaptureFormatError, CaptureRecord, RecordEvent, SourceStats
from kdissect.tables.columns import TABLES
from kdissect.tables.sink import SPILLABLE, Spill, TableSink

SNAPLEN = 262_144
KERNEL_BUFFER = 64 << 20  # libpcap's ring: absorbs bursts while Python decodes
POLL_MS = 50  # libpcap's block timeout: the longest a packet waits in the kernel ring
SO_ATTACH_FILTER = 26  # (asm-generic/socket.h: Linux on x86 and Arm)
BPF_MAXINSNS = 4096  # the longest classic BPF program a socket takes (linux/bpf_common.h)
IDLE_SLEEP = 0.005  # between polls of an empty ring
MAX_BATCH = 4096  # records taken per poll, so the view refreshes even under full load
_capture = native_module("engines._capture")  # the device read in C (else through ctypes, a packet at a time)
_READ_EMPTY, _READ_FULL = 0, 1  # a read stopped with no packet waiting / at its limit (else libpcap's error)
# Ended connections whose source file the sink forgets at a time (after naming their pending rows' files).
_FORGET_EVERY = 10_000
# Exchanges the figures and metrics take at most as one piece; else they take what came at each tick (the
# view refreshes, and Prometheus is worth scraping, once a second): a piece's fixed numpy cost is paid a few
# times a second, not per poll, and what the reader holds stays bounded.
PIECE_EXCHANGES = 16_384
_NOT_SPILLED_BY_SINK = tuple(t for t in TABLES if t not in SPILLABLE)  # the sink spills the others itself


class CaptureUnavailable(Exception):
    """The device cannot be opened (no privileges, no such interface, no libpcap): one line."""


_PRIVILEGES = (
    "capturing needs root, or CAP_NET_RAW and CAP_NET_ADMIN on the Python binary "
    "(setcap cap_net_raw,cap_net_admin=eip {python}), or read a capture with --read FILE|-"
)


def capture_filter(ports: Sequence[int], bpf: str | None) -> str:
    """The kernel filter: ``--bpf`` as given, else the ports, else every TCP packet (for detection)."""
    if bpf:
        return bpf
    if not ports:
        return "tcp"
    return "tcp and (" + " or ".join(f"port {p}" for p in ports) + ")"


class _SockFprog(ctypes.Structure):
    """Linux's struct sock_fprog: a classic BPF program for SO_ATTACH_FILTER (libpcap's instructions)."""

    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class PcapDevice:
    """A libpcap handle on ``interface`` with a kernel BPF filter (``any``: Linux cooked headers)."""

    def __init__(
        self,
        interface: str,
        bpf: str,
        *,
        snaplen: int = SNAPLEN,
        buffer_bytes: int = KERNEL_BUFFER,
        promiscuous: bool = False,
    ) -> None:
        try:
            from scapy.libs import winpcapy as pcap
        except (ImportError, OSError) as exc:  # OSError: scapy found no libpcap shared library
            raise CaptureUnavailable(f"libpcap is not available ({exc}); install libpcap, or use --read") from None
        self._pcap = pcap
        self.interface = interface
        self.name = f"device:{interface}"  # what ``source_file`` columns show for its rows
        errbuf = ctypes.create_string_buffer(256)
        handle = pcap.pcap_create(interface.encode(), errbuf)
        if not handle:
            raise CaptureUnavailable(f"cannot open {interface}: {errbuf.value.decode(errors='replace')}")
        self._handle = handle
        pcap.pcap_set_snaplen(handle, snaplen)
        pcap.pcap_set_promisc(handle, int(promiscuous))
        pcap.pcap_set_timeout(handle, POLL_MS)
        pcap.pcap_set_buffer_size(handle, buffer_bytes)
        status = pcap.pcap_activate(handle)
        if status < 0:
            self._fail(status)
        # Non-blocking: with TPACKET_V3, a blocking pcap_next_ex on a silent interface never returns
        # (measured with libpcap 1.10.3), and signals are only handled once it does.
        pcap.pcap_setnonblock(handle, 1, errbuf)
        self.link_type = pcap.pcap_datalink(handle)
        program = pcap.bpf_program()
        if pcap.pcap_compile(handle, ctypes.byref(program), bpf.encode(), 1, 0xFFFFFFFF) < 0:
            message = self._error()
            self.close()
            raise CaptureUnavailable(f"bad capture filter {bpf!r}: {message}")
        failed = pcap.pcap_setfilter(handle, ctypes.byref(program)) < 0
        pcap.pcap_freecode(ctypes.byref(program))
        if failed:
            message = self._error()
            self.close()
            raise CaptureUnavailable(f"cannot set the capture filter on {interface}: {message}")
        if interface == "lo":
            self._received_only(bpf)
        self._header = ctypes.POINTER(pcap.pcap_pkthdr)()
        self._data = ctypes.POINTER(ctypes.c_ubyte)()
        self._stat = pcap.pcap_stat()
        self._addresses: tuple[int, int] | None = None  # of pcap_next_ex and the handle, for _read_native
        self.ended = False

    def _received_only(self, bpf: str) -> None:
        """On ``lo`` the kernel puts every packet in the ring twice (sent, then received) and libpcap drops
        the sent copy after the ring (for that device only): drop it in the kernel instead, so the ring
        holds twice the traffic and its drop count counts packets once. The program is attached to the
        socket itself, the filter libpcap holds staying the one given: libpcap (1.10, TPACKET_V3) filters
        the blocks already in the ring when a filter is set in user space, where the direction test
        (``inbound``, an ancillary load) always fails. Anything refused: the filter stays as it is (what
        libpcap then drops after the ring is the same)."""
        pcap, program = self._pcap, self._pcap.bpf_program()
        if pcap.pcap_compile(self._handle, ctypes.byref(program), f"inbound and ({bpf})".encode(), 1,
                             0xFFFFFFFF) < 0:  # fmt: skip
            return
        try:
            fd = pcap.pcap_get_selectable_fd(self._handle)
            if fd >= 0 and program.bf_len <= BPF_MAXINSNS:
                fprog = _SockFprog(program.bf_len, ctypes.cast(program.bf_insns, ctypes.c_void_p))
                setsockopt = ctypes.CDLL(None).setsockopt
                setsockopt.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32]
                setsockopt.restype = ctypes.c_int
                setsockopt(fd, socket.SOL_SOCKET, SO_ATTACH_FILTER, ctypes.byref(fprog), ctypes.sizeof(fprog))
        finally:
            pcap.pcap_freecode(ctypes.byref(program))  # (the kernel keeps its own copy)

    def _error(self) -> str:
        return (self._pcap.pcap_geterr(self._handle) or b"").decode(errors="replace")

    def _fail(self, status: int) -> None:
        pcap = self._pcap
        detail = self._error() or (pcap.pcap_statustostr(status) or b"").decode(errors="replace")
        self.close()
        if status == -8 or "permission" in detail.lower() or "not permitted" in detail.lower():  # PERM_DENIED
            import sys

            raise CaptureUnavailable(
                f"no permission to capture on {self.interface}: "
                + _PRIVILEGES.format(python=os.path.realpath(sys.executable))
            )
        if status == -5:  # PCAP_ERROR_NO_SUCH_DEVICE
            raise CaptureUnavailable(f"no such interface: {self.interface} (see `ip link` for the names)")
        raise CaptureUnavailable(f"cannot capture on {self.interface}: {detail}")

    def poll(self, timeout: float) -> list[RecordEvent]:
        """Packets that arrived, waiting at most about ``timeout`` s (plus libpcap's 100 ms tick)."""
        read = self._read_native if _capture is not None else self._read_python
        out: list[RecordEvent] = []
        deadline = time.monotonic() + timeout
        while len(out) < MAX_BATCH:
            got = read(out, MAX_BATCH - len(out))
            if got < 0:  # the interface went away (-1) or pcap_breakloop (-2)
                self.ended = True
                break
            if got == _READ_FULL:
                continue
            if out or time.monotonic() >= deadline:
                break
            time.sleep(IDLE_SLEEP)
        return out

    def _read_native(self, out: list[RecordEvent], limit: int) -> int:
        """Up to ``limit`` waiting packets appended to ``out`` in one C call (``engines/_capture.c``)."""
        assert _capture is not None
        if self._addresses is None:
            as_address = ctypes.c_void_p
            self._addresses = (ctypes.cast(self._pcap.pcap_next_ex, as_address).value or 0,
                               ctypes.cast(self._handle, as_address).value or 0)
        return _capture.device_records(*self._addresses, limit, self.link_type, CaptureRecord, out)[1]

    def _read_python(self, out: list[RecordEvent], limit: int) -> int:
        """The reference of ``_read_native``: pcap_next_ex through ctypes, a packet at a time."""
        pcap, handle = self._pcap, self._handle
        header, data = self._header, self._data
        next_ex, string_at, link = pcap.pcap_next_ex, ctypes.string_at, self.link_type
        for _ in range(limit):
            got = next_ex(handle, ctypes.byref(header), ctypes.byref(data))
            if got != 1:
                return got if got < 0 else _READ_EMPTY
            h = header.contents
            ts = h.ts.tv_sec * 1_000_000_000 + h.ts.tv_usec * 1000
            out.append(CaptureRecord(link, ts, string_at(data, h.caplen), h.len, 0))
        return _READ_FULL

    def kernel_drops(self) -> int:
        """Packets dropped by the kernel (ring full) or the interface, as libpcap counts them."""
        if self._pcap.pcap_stats(self._handle, ctypes.byref(self._stat)) < 0:
            return 0
        return self._stat.ps_drop + self._stat.ps_ifdrop

    def close(self) -> list[RecordEvent]:
        if self._handle:
            self._pcap.pcap_close(self._handle)
            self._handle = None
            self._addresses = None
        self.ended = True
        return []


class RecordSource(Protocol):
    """What the run loop reads: a device or a followed capture stream."""

    ended: bool

    def poll(self, timeout: float) -> list[RecordEvent]: ...

    def close(self) -> list[RecordEvent]: ...


@dataclass
class LiveOptions:
    """How a live run is wired (the command line's options, minus where the packets come from)."""

    options: Options = field(default_factory=Options)
    tables: Sequence[str] = ()  # tables to write (with ``spill``); none: no table rows are kept
    spill: Spill | None = None  # receives each table's rows in pieces (a TableWriter's ``write``)
    window_s: int = 60
    several_inputs: bool = False  # a rotated set: packets repeated across its files are read once


class LiveRun:
    """The wiring of one live run, fed with capture records; no I/O of its own except through
    ``recorder`` (the raw copy), ``metrics`` and ``spill``."""

    def __init__(self, opts: LiveOptions, *, recorder: Any = None, metrics: Any = None,
                 native: NativeRecords | None = None) -> None:  # fmt: skip
        self.opts = opts
        self.stats = SourceStats()
        self.packets = PacketDecoder(opts.options.defrag(), stats=self.stats)
        self.native = native  # the followed capture's record walk (``followed_walk``): armed and counted here
        self.tables = None if opts.spill is None else TableRun(opts.options, opts.tables, written=opts.tables,
                                                                writer=opts.spill)  # fmt: skip
        self.sink = self.tables.sink if self.tables is not None else None
        opened = self.sink.connection_sources if self.sink is not None else None
        # The native lanes pair the common case into column pieces (as for the local engine): rows alone
        # when the tables ask for no more, else with their detail rows; the figures then take each row's
        # topics and codes from the scan.
        rows = self.sink is None or self.sink.takes_rows
        details = self.sink.lane_details() if self.sink is not None else None
        options = replace(opts.options, exchange_rows=rows, exchange_topics=True, exchange_details=details)
        self.pipeline = KafkaPipeline(options, opened=opened, several_inputs=opts.several_inputs)
        self._ended: list[int] = []  # connections whose file the sink may forget once their rows are named
        self.figures = RollingFigures(window=opts.window_s)
        self.reader = ExchangeReader()
        self.recorder = recorder
        self.metrics = metrics
        self.finished = False

    @property
    def open_connections(self) -> int:
        return self.pipeline.reassembler.open_connections

    def feed(self, records: list[RecordEvent | SegmentEvent]) -> None:
        """A poll's records (a followed capture's common ones already segments: ``followed_walk``)."""
        segments: list = []
        recorder = self.recorder
        if recorder is not None:
            for record in records:
                kind = type(record)
                if kind is CaptureRecord:
                    recorder.write(record)
                elif kind is tuple:  # (record, segment): the native walk's, for a raw copy
                    recorder.write(record[0])  # type: ignore[index]
        stats, native = self.stats, self.native
        packets, captured = stats.packets, stats.captured_bytes
        if native is not None:
            self.packets.count_native(*native.counted())
        self.packets.decode_all(records, segments)  # runs of common records in one native call
        if native is not None:  # (the walk takes the next poll's records unless fragments wait: as CaptureDecoder)
            native.active = not self.packets.reassembling
        self.events(feed_items(self.pipeline, segments, self.pipeline.source))  # segments in batches
        if self.metrics is not None and records:
            self.metrics.packets.inc(stats.packets - packets)
            self.metrics.bytes.inc(stats.captured_bytes - captured)

    def feed_segment(self, segment: TcpSegment) -> None:
        """A segment straight into the core (replays without capture bytes)."""
        self.events(self.pipeline.feed(segment))

    def events(self, events: Iterable[KafkaEvent]) -> None:
        """Events into the sink as they come (a batch's events are not held: the pipeline's pieces are taken
        while their rows are still in the cache), their exchanges into the reader; the figures and
        metrics take the exchanges a piece at a time: up to each anomaly, at each tick, at the end, or
        ``PIECE_EXCHANGES`` at a time."""
        figures, metrics, sink, reader = self.figures, self.metrics, self.sink, self.reader
        seen = False
        for ev in events:
            seen = True
            kind = type(ev)
            if kind is ExchangeRows or kind is Exchange:
                reader.add(ev)
                if reader.pending >= PIECE_EXCHANGES:
                    self._exchanges()
            elif kind is Anomaly:
                self._exchanges()  # (in their order: metrics cap anomaly kinds with error names)
                figures.anomaly(ev.kind, ev.length, ev.ts_ns)
                if metrics is not None:
                    metrics.anomaly(ev.kind)
            if sink is not None:
                sink.consume(ev)
                if kind is ConnectionSummary:
                    self._ended.append(ev.conn_id)
        if sink is not None and seen:
            self._spill(sink)
        if sink is not None and len(self._ended) >= _FORGET_EVERY:
            sink.forget_connections(self._ended)
            self._ended = []

    def _exchanges(self) -> None:
        """The exchanges read since the last piece, into the figures and metrics."""
        if not self.reader.pending:
            return
        piece = self.reader.take()
        self.figures.add_exchanges(piece)
        if self.metrics is not None:
            self.metrics.add_exchanges(piece)

    def _spill(self, sink: TableSink) -> None:
        assert self.tables is not None
        for name in _NOT_SPILLED_BY_SINK:
            if len(sink.rows[name]) >= self.opts.options.spill_rows:
                self.tables.spill(name)

    def tick(self, kernel_drops: int | None) -> None:
        """Once a second: the exchanges read so far into the figures and metrics, libpcap's drop count
        and the gauges."""
        self._exchanges()
        figures = self.figures
        if kernel_drops is not None and kernel_drops > figures.kernel_drops:
            if self.metrics is not None:
                self.metrics.drops.inc(kernel_drops - figures.kernel_drops)
            figures.kernel_drops = kernel_drops
        self._count()
        if self.metrics is not None:
            self.metrics.open_connections.set(self.open_connections)
        if self.recorder is not None:
            self.recorder.flush()

    def _count(self) -> None:
        self.figures.packets = self.stats.packets
        self.figures.open_connections = self.open_connections

    def finish(self) -> None:
        """End of capture: every connection ends (open requests become ``unanswered``), the
        last IP fragments are given up, and the tables' last rows go to ``spill``."""
        if self.finished:
            return
        self.finished = True
        rest: list = []
        self.packets.flush(rest)
        for item in rest:
            self.events(feed_item(self.pipeline, item))
        self.events(self.pipeline.finish())
        self._exchanges()
        self._count()
        if self.recorder is not None:
            self.recorder.close()
        if self.tables is not None:
            for name, columns in self.tables.finish().items():
                self.tables.write(name, columns)


class View(Protocol):
    def update(self, figures: RollingFigures, elapsed: float) -> None: ...

    def close(self) -> None: ...


class StopSignals:
    """Ctrl-C and SIGTERM ask the run to stop cleanly; a second one quits at once (exit 130),
    after flushing the raw capture so what it holds stays readable."""

    def __init__(self, on_second: Callable[[], None] | None = None) -> None:
        self.requested: str | None = None
        self._on_second = on_second
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, frame: object) -> None:
        if self.requested is None:
            self.requested = signal.Signals(signum).name
            return
        if self._on_second is not None:
            self._on_second()
        os._exit(130)


def run_loop(
    source: RecordSource,
    run: LiveRun,
    view: View,
    stop: StopSignals,
    *,
    duration: float | None = None,
    refresh_s: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
    keys: Callable[[], object] | None = None,
) -> str:
    """Read ``source`` into ``run`` until a stop; refresh ``view`` every ``refresh_s``. Returns why
    it stopped ("SIGINT", "SIGTERM", "duration", "end of input"). ``keys`` reads what was appended to
    the key log, before each batch (a client writes its keys as it connects, before its records)."""
    start = clock()
    next_refresh = start + refresh_s
    reason = "end of input"
    drops = getattr(source, "kernel_drops", None)
    while True:
        if stop.requested is not None:
            reason = stop.requested
            break
        now = clock()
        if duration is not None and now - start >= duration:
            reason = "duration"
            break
        limit = next_refresh if duration is None else min(next_refresh, start + duration)
        records = source.poll(max(0.0, limit - now))
        run.pipeline.source = getattr(source, "name", None)  # the file (or device) they came from
        if keys is not None:
            keys()
        run.feed(records)
        if source.ended:
            break
        if clock() >= next_refresh:
            next_refresh = clock() + refresh_s
            run.tick(drops() if drops else None)
            view.update(run.figures, clock() - start)
    if drops:
        run.tick(drops())  # libpcap's last count, before the device closes
    run.feed(source.close())
    run.finish()
    view.update(run.figures, clock() - start)
    view.close()
    return reason


def report_input(read: str | None, write: str | None) -> Path | None:
    """The capture a ``--report`` is built from: the ``--read`` file, else the ``--write`` copy."""
    if read and read != "-" and Path(read).is_file():
        return Path(read)
    return Path(write) if write else None


@dataclass
class LiveRequest:
    """One live run as a face asks for it: where the packets come from (``interface``, or ``read``: a
    capture being written, a rotated-capture directory, ``-``), what the run writes (``write``: a raw
    pcapng copy; ``out``: the ``tables`` as ``format``, in pieces as they grow), what it serves
    (Prometheus metrics on ``metrics_port``) and when it stops (``duration``, else a signal or the end
    of the input). ``kernel_ports`` make the kernel filter unless ``bpf`` is given (none: every TCP
    packet, for auto-detection); ``keylog`` is a key log file followed as clients append to it."""

    interface: str | None = None
    read: str | None = None
    follow: bool = True
    options: Options = field(default_factory=Options)
    kernel_ports: Sequence[int] = ()
    bpf: str | None = None
    keylog: str | None = None
    duration: float | None = None
    write: str | None = None
    out: str | None = None
    format: str = "parquet"
    tables: Sequence[str] = tuple(TABLES)
    metrics_port: int | None = None
    metrics_address: str = "127.0.0.1"
    max_label_values: int = 100


def followed_walk(raw_copy: bool) -> NativeRecords | None:
    """The native record walk of a followed capture (``--read``), when it is built: its common records
    come as segments, each with its record for a raw copy (``--write``); the run arms and counts it."""
    return NativeRecords(with_records=raw_copy) if NativeRecords.available() else None


def open_source(request: LiveRequest, native: NativeRecords | None = None) -> tuple[RecordSource, str]:
    """The device or the followed capture stream (read with ``native``: ``followed_walk``), and its
    title for the view; one-line errors."""
    if request.read is not None:
        from kdissect.sources.follow import FollowedCapture

        if request.read != "-" and not Path(request.read).exists():
            raise RequestError(f"cannot read {request.read}: no such file or directory")
        return FollowedCapture(request.read, follow=request.follow, native=native), request.read
    assert request.interface is not None
    bpf = capture_filter(request.kernel_ports, request.bpf)
    try:
        return PcapDevice(request.interface, bpf), f"{request.interface}, filter {bpf!r}"
    except CaptureUnavailable as exc:
        raise RequestError(str(exc)) from None


def watch(request: LiveRequest, view_for: Callable[[str], View]) -> RunResult:
    """The live engine's one call: the run wired (key log followed, metrics served, raw copy and
    tables written), read until a stop, with ``view_for(title)`` refreshed as it goes. Raises
    ``RequestError`` for a source, device or port it cannot use, ``NothingReadable`` when no input
    was a capture."""
    options = request.options
    keys = None
    if request.keylog is not None:  # clients append to it as they connect (it may not exist yet): read on
        from kdissect.engines.keylog_file import KeyLogFile

        keys = KeyLogFile(request.keylog)
        keys.follow()
        options = replace(options, tls_keylog=keys.keylog)
    native = followed_walk(bool(request.write)) if request.read is not None else None
    source, title = open_source(request, native)
    metrics = None
    if request.metrics_port is not None:
        from kdissect.engines.live_metrics import LiveMetrics

        metrics = LiveMetrics(request.max_label_values)
        try:
            metrics.serve(request.metrics_port, request.metrics_address)
        except OSError as exc:
            raise RequestError(f"cannot serve metrics on {request.metrics_address} port {request.metrics_port}: "
                               f"{exc.strerror}") from None  # fmt: skip
    recorder = None
    if request.write:
        from kdissect.engines.pcapng_out import PcapngRecorder

        recorder = PcapngRecorder(request.write)
    writer = None
    if request.out:
        from kdissect.tables.writer import TableWriter

        writer = TableWriter(Path(request.out), request.format)
    tune_gc()
    opts = LiveOptions(options, request.tables if writer else (), writer.write if writer else None,
                       several_inputs=bool(request.read) and Path(request.read).is_dir())  # fmt: skip
    run = LiveRun(opts, recorder=recorder, metrics=metrics, native=native)
    view = view_for(title)
    start = time.monotonic()
    with StopSignals(on_second=recorder.flush if recorder else None) as stop:
        try:
            reason = run_loop(source, run, view, stop, duration=request.duration, keys=keys.follow if keys else None)
        except CaptureFormatError as exc:  # the one input named is no capture
            raise NothingReadable(str(exc)) from None
        finally:
            view.close()
    stats = RunStats(len(getattr(source, "files_read", ())), run.stats,
                     unreadable=list(getattr(source, "skipped", ())))  # fmt: skip
    written = writer.close() if writer is not None else []
    outcome = LiveOutcome(run.figures, time.monotonic() - start, reason, recorder.packets if recorder else None)
    return RunResult(stats, None, written, live=outcome)
