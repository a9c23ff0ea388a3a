"""``kdissect report`` in its three formats: same sections and tables, and wire strings made inert.

The hostile capture is the synthetic cluster with a client id and a topic full of HTML and terminal
escape sequences, bidi overrides and zero-width marks.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kdissect.testing.cluster import cluster_capture

HOSTILE_CLIENT = "<script>alert(1)</script>\x1b[31mred\u202eevil\u200f\u061c\ufeff"
HOSTILE_TOPIC = '<img src=x onerror="alert(2)">\x1b]0;pwned\x07\u2066'
INVISIBLE = ["\x1b", "\x07", "\u202e", "\u200f", "\u061c", "\ufeff", "\u2066"]
SECTIONS = [
    "Overview",
    "Latency",
    "Kafka-aware latency",
    "Traffic over time",
    "Errors",
    "Consumer groups and lag",
    "Transactions",
    "Cluster topology",
    "Clients",
    "Throughput",
    "Anomalies",
]


def kdissect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kdissect.cli", *args], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cluster_capture(
        tmp_path_factory.mktemp("hostile") / "hostile.pcap", orders=HOSTILE_TOPIC, producer_client=HOSTILE_CLIENT
    )


@pytest.fixture(scope="module")
def reports(hostile: Path) -> dict[str, str]:
    out = {}
    for fmt in ("html", "md", "json"):
        path = hostile.with_suffix(f".{fmt}")
        done = kdissect("report", str(hostile), "-o", str(path))
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"wrote {path}")
        out[fmt] = path.read_text(encoding="utf-8")
    return out


def test_html_is_self_contained_and_escapes_wire_strings(reports: dict[str, str]) -> None:
    html = reports["html"]
    assert "<script" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31mred\\u202eevil\\u200f\\u061c\\ufeff" in html
    assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;\\x1b]0;pwned\\x07\\u2066" in html
    assert not any(c in html for c in INVISIBLE)
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", html)  # nothing to fetch
    assert 'http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;;' in html
    for section in SECTIONS:
        assert f"<h2>{section}</h2>" in html
    for svg in re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", html):
        picture = base64.b64decode(svg).decode("utf-8")
        assert "<script" not in picture and not any(c in picture for c in INVISIBLE)
    assert len(html) < 3_000_000


def test_markdown_escapes_html_and_markup(reports: dict[str, str]) -> None:
    md = reports["md"]
    assert "<script" not in md and "<img" not in md and not any(c in md for c in INVISIBLE)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\\\x1b\\[31mred" in md  # the escape is shown, and inert
    for section in SECTIONS:
        assert f"\n## {section}\n" in md


def test_json_keeps_the_wire_string_exactly_and_is_ascii(reports: dict[str, str]) -> None:
    raw = reports["json"]
    assert raw.isascii()
    doc = json.loads(raw)
    assert [s["title"] for s in doc["sections"]] == SECTIONS
    clients = next(t for s in doc["sections"] for t in s["tables"] if t["title"] == "Client inventory")
    assert HOSTILE_CLIENT in [row[0] for row in clients["rows"]]
    topics = next(t for s in doc["sections"] for t in s["tables"] if t["title"] == "By topic")
    assert HOSTILE_TOPIC in [row[0] for row in topics["rows"]]


def test_the_three_formats_carry_the_same_tables(reports: dict[str, str]) -> None:
    doc = json.loads(reports["json"])
    titles = [t["title"] for s in doc["sections"] for t in s["tables"]]
    md_titles = re.findall(r"^### (.+)$", reports["md"], re.M)
    assert len(md_titles) == len(titles)
    html_titles = re.findall(r"<h3>(.+?)</h3>|<summary>(.+?) \(\d+ rows\)</summary>", reports["html"])
    assert len(html_titles) == len(titles)
    figures = [f for s in doc["sections"] for f in s["figures"]]
    assert len(figures) == reports["html"].count("<figure>") == reports["md"].count("*Picture in the HTML report")
    assert len(figures) == 4


def _md_table(md: str, title: str, after: str = "") -> list[dict[str, str]]:
    """The rows of the first Markdown table titled ``title`` (after the heading ``after``), by column."""
    start = md.index(f"### {title}\n", md.index(after))
    lines = [line for line in md[start:].split("\n\n")[1].splitlines()]
    names = [c.strip().replace("\\_", "_") for c in lines[0].strip("|").split("|")]
    return [dict(zip(names, (c.strip() for c in row.strip("|").split("|")), strict=True)) for row in lines[2:]]


def test_numbers_carry_their_units_in_html_and_markdown_and_stay_numbers_in_json(reports: dict[str, str]) -> None:
    throughput = _md_table(reports["md"], "By topic", "## Throughput")[0]
    assert re.fullmatch(r"[\d.,]+ (B|kB|MB)/s", throughput["bytes_per_s"]), throughput
    assert re.fullmatch(r"[\d.,]+ (B|kB|MB)", throughput["bytes"]) and throughput["records_per_s"].endswith("/s")
    step = _md_table(reports["md"], "Per step")[0]
    assert re.fullmatch(r"[\d.]+ (ms|s)", step["p50_ms"]) and step["error_rate"].endswith("%"), step
    assert step["p99_ms"] == ""  # too few latencies in one step for a p99 (MIN_SAMPLES): left empty
    latency = _md_table(reports["md"], "By broker", "## Latency")[0]
    assert all(re.fullmatch(r"[\d.]+ (ms|s)", latency[p]) for p in ("p50", "max")), latency
    assert f"<td class=\"num\">{throughput['bytes_per_s']}</td>" in reports["html"]
    doc = json.loads(reports["json"])
    by_topic = next(t for s in doc["sections"] if s["id"] == "throughput" for t in s["tables"])
    assert isinstance(by_topic["rows"][0][by_topic["columns"].index("bytes_per_s")], float)


def test_three_broker_cluster_named_by_node_and_host(reports: dict[str, str]) -> None:
    for node in (
        "node 1 10.0.0.11:9092 (rack r1)",
        "node 2 10.0.0.12:9092 (rack r2)",
        "node 3 10.0.0.13:9092 (rack r3)",
    ):
        assert node in reports["html"] and node in reports["md"]


def test_terminal_headline_escapes_wire_strings(hostile: Path) -> None:
    done = kdissect("analyze", str(hostile))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert not any(c in out for c in INVISIBLE)
    lines = out.splitlines()
    assert lines[2].split() == [
        "api",
        "count",
        "p50",
        "ms",
        "p90",
        "ms",
        "p99",
        "ms",
        "max",
        "ms",
        "errors",
        "unanswered",
    ]
    assert lines[3].startswith("Fetch ")  # slowest p99 first: the Fetch that overran its max wait
    assert "  Produce    NOT_LEADER_OR_FOLLOWER      1" in out
    assert "normal protocol step, not an error: JoinGroup MEMBER_ID_REQUIRED x1" in out
    assert "status: no_response_expected 1" in out
    assert lines[-1] == f"more (groups, lag, transactions, topology, plots): kdissect report {hostile} -o report.html"


def test_report_refuses_an_unknown_format_and_a_missing_capture(tmp_path: Path) -> None:
    bad = kdissect("report", str(tmp_path / "missing.pcap"), "-o", str(tmp_path / "r.html"))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no such file" in bad.stderr
    wrong = kdissect("report", str(tmp_path / "x.pcap"), "-o", "r.html", "--format", "pdf")
    assert wrong.returncode == 2 and "invalid choice" in wrong.stderr


def test_captures_with_nothing_to_show_still_give_every_section(tmp_path: Path) -> None:
    from kdissect.testing.conversation import tcp_conversation
    from kdissect.testing.pcapwrite import write_capture

    empty = tmp_path / "empty.pcap"
    empty.write_bytes(write_capture([]))
    http = tmp_path / "http.pcap"
    http.write_bytes(
        write_capture(tcp_conversation([(0, b"GET / HTTP/1.1\r\n\r\n", 1), (1, b"HTTP/1.1 200 OK\r\n", 2)]))
    )
    for capture in (empty, http):
        done = kdissect("report", str(capture), "-o", str(tmp_path / "r.json"))
        assert done.returncode == 0, done.stderr
        doc = json.loads((tmp_path / "r.json").read_text())
        assert [s["title"] for s in doc["sections"]] == SECTIONS
    anomalies = doc["sections"][-1]["tables"][0]
    assert "not_kafka" in {row[0] for row in anomalies["rows"]}


def test_each_bounded_listing_states_its_limit_and_true_total_in_every_format(reports: dict[str, str]) -> None:
    """A listing's limit and its true total are said in its section's intro, in HTML, Markdown and
    JSON alike (not only in docs/report-figures.md)."""
    import html

    from kdissect.report.limits import first

    doc = json.loads(reports["json"])
    sections = {s["id"]: s for s in doc["sections"]}
    total = {t["title"]: t["rows_total"] for s in doc["sections"] for t in s["tables"]}
    said = {
        "kafka-latency": first("JoinGroup waits", 200, total["JoinGroup waits"], "in capture order"),
        "groups": first("committed offsets", 200, total["Committed offsets against the log end"]),
        "topology": first("all partitions listed", 200, total["All partitions"], "by topic and partition"),
        "anomalies": first("anomaly rows", 200, total["Anomalies"], "in capture order"),
    }
    assert total["JoinGroup waits"] and total["All partitions"]  # (the capture has rows to count)
    for section, sentence in said.items():
        assert sentence in sections[section]["intro"], section
        assert sentence in html.unescape(reports["html"]) and sentence in reports["md"], section
    assert first("rows", 200, 1234) == "rows: the first 200 in time order of 1,234 (limit 200)"
    for section in ("latency", "errors", "groups", "clients", "throughput"):
        assert "at most 10,000" in sections[section]["intro"], section
