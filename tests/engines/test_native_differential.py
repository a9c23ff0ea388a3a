"""The native path against the Python reference, end to end: every table of every capture equal.

Each case is analysed by the local engine twice, in child processes (which native parts load is
decided at import): once as installed and once with ``KDISSECT_PURE_PYTHON=1``. The cases are the
corpus of real captures, the production shapes (a file cut mid-record, a capture starting
mid-conversation, a rotated set read as one capture, alone, beside a copy of part of it and
interleaved in time with another's, the same traffic as pcapng on two interfaces
of two resolutions in two sections) and the hostile generators. The live engine's leg runs
``kdissect live --read CAP --no-follow --out`` both ways (its records go to the native path a poll
at a time). The exchanges-only table, the summary's figures and the live engine's figures and
Prometheus series are compared too: those runs take exchanges as rows the native pairing makes (live's
with each request's topics and every error code from the exchange scan); every-table runs (and one of a
few tables, one of partitions and request_params alone, batches alone, and live's ``--out``) take them
with their detail rows made by the pairing too. What each native part takes is checked by its own
differential test (tests/sources/test_native_sources.py, the
decoder's in tests/decoders); this one checks that nothing between them changes a table.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kdissect.native import PURE_PYTHON_ENV, native_module
from kdissect.sources.reader import CaptureParser
from kdissect.sources.shapes import CaptureRecord
from kdissect.testing.hostile import BUILDERS
from kdissect.testing.pcapwrite import Frame, Interface, pcapng_section
from tests.engines.live_helpers import KDISSECT, assert_same_tables
from tests.engines.spark_helpers import interleaved_rotations, record_ends, write_rotated

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
CORPUS = sorted(p for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
HOSTILE_SIZE = 40

pytestmark = pytest.mark.skipif(native_module("sources._native") is None, reason="the native path is not built")

_ANALYSE = """
import pickle, sys
from kdissect.engines import local
from kdissect.tables.columns import cells
cases = pickle.loads(sys.stdin.buffer.read())
out = {}
for name, paths in cases.items():
    run = local.analyze(paths)
    out[name] = {t: {c: cells(v) for c, v in cols.items()} for t, cols in run.tables.items()}
    # the runs whose exchanges the native pairing makes into rows (Options.exchange_rows): the exchanges
    # table alone, and the summary's figures
    rows = local.analyze(paths, tables=["exchanges"])
    out[name]["exchanges only"] = {c: cells(v) for c, v in rows.tables["exchanges"].items()}
    out[name]["summary"] = repr(local.summary(paths).summary)
    # every table above, and a few: the runs whose pairing also makes the detail rows
    # (Options.exchange_details), whatever tables the sink leaves out
    some = local.analyze(paths, tables=["partitions", "errors", "brokers", "records"])
    out[name]["details"] = {t: {c: cells(v) for c, v in cols.items()} for t, cols in some.tables.items()}
    # and with no table that reads the exchanges' left parts (errors, brokers, records): none is made
    lean = local.analyze(paths, tables=["partitions", "request_params"])
    out[name]["lean details"] = {t: {c: cells(v) for c, v in cols.items()} for t, cols in lean.tables.items()}
    # batches without records (the native rows decode into a scratch arena), where there are batches
    if out[name]["batches"]["direction"]:
        alone = local.analyze(paths, tables=["batches"])
        out[name]["batches alone"] = {c: cells(v) for c, v in alone.tables["batches"].items()}
sys.stdout.buffer.write(pickle.dumps(out))
"""
# The live engine's figures and Prometheus series, with no table written: its exchanges then come as rows of
# the native pairing, with each request's topics and every error code from the scan (Options.exchange_topics);
# and with every table written (dropped here): then with their detail rows, the scan listing a response's codes
# and topic ids only where the detail walk may have met some.
_LIVE = """
from pathlib import Path
from kdissect.engines.live import LiveOptions, LiveRun, followed_walk
from kdissect.engines.live_metrics import LiveMetrics
from kdissect.sources.follow import FollowedCapture
from kdissect.sources.shapes import CaptureFormatError
from kdissect.tables.columns import TABLES

def live(paths, tables=False):
    metrics = LiveMetrics(max_label_values=4)
    walk = followed_walk(raw_copy=False)  # (the followed file's common records as segments, as ``watch`` reads them)
    written = dict(tables=TABLES, spill=lambda name, columns: None) if tables else {}
    run = LiveRun(LiveOptions(window_s=5, several_inputs=len(paths) > 1, **written), metrics=metrics, native=walk)
    source = FollowedCapture(paths[0] if len(paths) == 1 else str(Path(paths[0]).parent), follow=False, native=walk)
    try:
        while not source.ended:
            run.feed(source.poll(0))
    except CaptureFormatError as exc:  # (live reads no compressed capture: the engine says so in one line)
        return str(exc)
    run.feed(source.close())
    run.finish()
    f = run.figures
    seconds = [(s.second, s.requests, s.errors, s.request_bytes, s.response_bytes, s.latency) for s in f.seconds]
    apis = {k: (t.count, t.errors, t.unanswered, t.max_ms, t.latency) for k, t in f.apis.items()}
    series = [(s.name, sorted(s.labels.items()), s.value) for m in metrics.registry.collect() for s in m.samples
              if not s.name.endswith("_created")]
    return (f.exchanges, f.failed, seconds, apis, *(list(c.items()) for c in (f.statuses, f.errors, f.clients,
            f.topics, f.anomalies)), f.first_ns, f.last_ns, series, repr(run.stats))

import pickle, sys
from kdissect.sources import follow
cases = pickle.loads(sys.stdin.buffer.read())
whole = {name: (live(paths), live(paths, tables=True)) for name, paths in cases.items()}
follow.CHUNK = 4093  # polls of a few records: the walk stops inside records and is armed again between polls
sys.stdout.buffer.write(pickle.dumps({name: (*whole[name], live(paths)) for name, paths in cases.items()}))
"""


def _env(pure: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != PURE_PYTHON_ENV}
    if pure:
        env[PURE_PYTHON_ENV] = "1"
    return env


def _tables(cases: dict[str, list[str]], pure: bool, script: str = _ANALYSE) -> dict:
    done = subprocess.run([sys.executable, "-c", script], input=pickle.dumps(cases), capture_output=True,
                          env=_env(pure), check=True, timeout=600)
    return pickle.loads(done.stdout)


def _cases(tmp: Path) -> dict[str, list[str]]:
    cases = {p.name: [str(p)] for p in CORPUS}
    pcap = CAPTURES / "librdkafka-produce-consume.pcap"
    data = pcap.read_bytes()
    ends = record_ends(data)
    cut = tmp / "cut.pcap"
    cut.write_bytes(data[: ends[len(ends) // 2] + 30])  # ends inside a record
    mid = tmp / "midstream.pcap"
    mid.write_bytes(data[:24] + data[ends[len(ends) // 3] :])  # starts mid-conversation
    cases["cut"], cases["midstream"] = [str(cut)], [str(mid)]
    cases["rotated"] = write_rotated(data, ends[5:-1:40], tmp / "rotated")
    # the rotated set beside a copy of two of its files (the duplicate filter before the lanes), and
    # rotated captures of two places whose times interleave (the merge switching between inputs)
    (tmp / "copy").mkdir()
    copies = [shutil.copy(path, tmp / "copy" / Path(path).name) for path in cases["rotated"][1:3]]
    cases["overlapping"] = [*cases["rotated"], *copies]
    cases["interleaved"] = interleaved_rotations(tmp / "interleaved")
    cases["pcapng-sections"] = [str(_as_pcapng_sections(data, tmp / "sections.pcapng"))]
    for name, build in BUILDERS.items():
        path = tmp / f"{name}.pcap"
        path.write_bytes(build(HOSTILE_SIZE))
        cases[name] = [str(path)]
    return cases


def _as_pcapng_sections(pcap: bytes, path: Path) -> Path:
    """The records of a pcap as pcapng: alternately on a µs and a ns interface, the second half in a
    second (big-endian) section that declares the interfaces the other way round."""
    records = [e for e in CaptureParser().feed(pcap) if type(e) is CaptureRecord]
    link = records[0].link_type
    interfaces = [Interface(link, tsresol=6), Interface(link, tsresol=9)]
    frames = [Frame(r.ts_ns // 1000 * 1000, r.data, i % 2) for i, r in enumerate(records)]
    half = len(frames) // 2
    second = [Frame(f.ts_ns, f.data, 1 - f.interface) for f in frames[half:]]
    path.write_bytes(pcapng_section(frames[:half], interfaces)
                     + pcapng_section(second, interfaces[::-1], byteorder="big"))
    return path


def test_every_table_is_the_same_on_both_paths(tmp_path: Path) -> None:
    cases = _cases(tmp_path)
    native, reference = _tables(cases, pure=False), _tables(cases, pure=True)
    assert native.keys() == reference.keys() == cases.keys()
    for name in cases:
        for table, columns in reference[name].items():
            assert native[name][table] == columns, (name, table)


def test_live_figures_are_the_same_on_both_paths(tmp_path: Path) -> None:
    cases = _cases(tmp_path)
    native, reference = _tables(cases, pure=False, script=_LIVE), _tables(cases, pure=True, script=_LIVE)
    assert native.keys() == reference.keys() == cases.keys()
    for name in cases:
        assert native[name] == reference[name], name


LIVE_CASES = ["librdkafka-produce-consume.pcap", "kafka-python-produce-consume.pcapng"]


@pytest.mark.parametrize("name", [*LIVE_CASES, "pcapng-sections", "ip_fragments", "out_of_order_segments"])
def test_live_read_writes_the_same_tables_on_both_paths(name: str, tmp_path: Path) -> None:
    if name in LIVE_CASES:
        capture = CAPTURES / name
    elif name == "pcapng-sections":
        capture = _as_pcapng_sections((CAPTURES / LIVE_CASES[0]).read_bytes(), tmp_path / "in.pcapng")
    else:
        capture = tmp_path / "in.pcap"
        capture.write_bytes(BUILDERS[name](HOSTILE_SIZE))
    outs = [tmp_path / "native", tmp_path / "reference"]
    for out, pure in zip(outs, (False, True), strict=True):
        subprocess.run([*KDISSECT, "live", "--read", str(capture), "--no-follow", "--quiet", "--out", str(out)],
                       env=_env(pure), check=True, capture_output=True, timeout=600)
    assert_same_tables(*outs)
