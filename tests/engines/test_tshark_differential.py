"""kdissect against tshark's Kafka dissector on every real capture: per message, in stream order,
the frame length, correlation id, api key and api version must agree.

tshark 4.0 knows Kafka only up to about 2.5 (Produce v8, Fetch v11, Metadata v9) and throws on
legacy message sets. When its request dissection throws, it never records the request, so the
answer comes out as "Request missing" with no api key. Every disagreement must match one of the
explanations below, each of which checks the bytes (tshark's own verdict on the request, and a
complete, exact kdissect decode); anything else fails the test.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import kdissect
from kdissect.decoders import apis
from kdissect.events import KafkaMessage
from tests.conftest import require_tool

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
NAMES = sorted(p.name.removesuffix(".truth.json") for p in CAPTURES.glob("*.truth.json"))
TSHARK = shutil.which("tshark")


@pytest.fixture(autouse=True)
def _tshark() -> None:
    require_tool("tshark")


@dataclass(frozen=True)
class TsharkPdu:
    """One Kafka PDU as tshark dissected it."""

    length: int
    correlation_id: int
    api_key: int | None
    api_version: int | None
    unsupported_version: bool  # tshark flagged the version as beyond what it knows
    malformed: bool  # tshark threw while dissecting the packet holding this PDU


def _names(tree: object, out: set[str]) -> set[str]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            out.add(key)
            _names(value, out)
    elif isinstance(tree, list):
        for value in tree:
            _names(value, out)
    return out


def _int(value: str | None) -> int | None:
    return None if value is None else int(value)


@cache
def tshark_pdus(path: Path, port: int) -> dict[tuple[int, bool], list[TsharkPdu]]:
    """(client port, is_request) -> tshark's Kafka PDUs in stream order."""
    out = subprocess.run([TSHARK, "-r", str(path), "-d", f"tcp.port=={port},kafka", "-T", "json", "-J", "tcp kafka"],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    pdus: dict[tuple[int, bool], list[TsharkPdu]] = defaultdict(list)
    for packet in json.loads(out):
        layers = packet["_source"]["layers"]
        if "kafka" not in layers:
            continue
        src, dst = int(layers["tcp"]["tcp.srcport"]), int(layers["tcp"]["tcp.dstport"])
        is_request = dst == port
        kafka = layers["kafka"]
        for pdu in kafka if isinstance(kafka, list) else [kafka]:
            pdus[(src if is_request else dst, is_request)].append(TsharkPdu(
                length=int(pdu["kafka.len"]), correlation_id=int(pdu["kafka.correlation_id"]),
                api_key=_int(pdu.get("kafka.api_key" if is_request else "kafka.response_key")),
                api_version=_int(pdu.get("kafka.api_version" if is_request else "kafka.response.version")),
                unsupported_version="kafka.unsupported_api_version" in _names(pdu, set()),
                malformed="_ws.malformed" in layers))
    return pdus


@cache
def kdissect_messages(path: Path) -> dict[tuple[int, bool], list[KafkaMessage]]:
    """(client port, is_request) -> kdissect's messages in stream order."""
    msgs: dict[tuple[int, bool], list[KafkaMessage]] = defaultdict(list)
    for ex in kdissect.open_capture(path).exchanges_iter():
        assert ex.client is not None
        for msg in (ex.request, ex.response):
            if msg is not None:
                msgs[(ex.client[1], msg.is_request)].append(msg)
    return {key: sorted(ms, key=lambda m: m.offset) for key, ms in msgs.items()}


def decoded_exactly(msg: KafkaMessage | None) -> bool:
    """kdissect decoded every byte of the message: a body, and no cut or leftover bytes."""
    return (msg is not None and msg.body is not None and msg.error is None
            and not {w["code"] for w in msg.warnings} & {"cut", "trailing_bytes"})


def is_cut(msg: KafkaMessage) -> bool:
    return any(w["code"] == "cut" for w in msg.warnings)


def explain(name: str, port: int, client_port: int, ts: TsharkPdu, kd: KafkaMessage) -> str | None:
    """Why tshark and kdissect disagree on this response, with kdissect shown right; None if unexplained."""
    path = CAPTURES / truth(name)["capture"]["file"]
    if kd.is_request or ts.api_key is not None or ts.correlation_id != kd.correlation_id:
        return None
    if ts.length != kd.size:
        return None
    if kd.body is not None and any(w["code"] == "inferred" for w in kd.warnings):
        # an orphan (its request not captured): tshark cannot decode it; kdissect infers the request
        return "orphan response decoded by inference: tshark has no request to decode it with"
    requests_ts = [p for p in tshark_pdus(path, port)[(client_port, True)] if p.correlation_id == kd.correlation_id]
    requests_kd = [m for m in kdissect_messages(path)[(client_port, True)] if m.correlation_id == kd.correlation_id]
    if len(requests_kd) != 1:
        return None
    [request] = requests_kd
    if len(requests_ts) != 1:
        return None
    [req_ts] = requests_ts
    if (req_ts.api_key, req_ts.api_version) != (request.api_key, request.api_version):
        return None
    if is_cut(request) and req_ts.length == request.size and (decoded_exactly(kd) or is_cut(kd)):
        # tshark gives up on a PDU it holds only the head of; kdissect pairs it from that header
        return "request cut by the snap length: tshark records no request to match"
    if not (req_ts.malformed and decoded_exactly(request) and (decoded_exactly(kd) or is_cut(kd))):
        return None
    if req_ts.unsupported_version:
        return f"tshark threw on {api(request)} v{request.api_version}, a version it does not know"
    if request.api_key == 0 and request.api_version is not None and request.api_version <= 2:
        recs = records(path)
        ours = recs[(recs["connection_id"] == request.conn_id) & (recs["correlation_id"] == request.correlation_id)]
        if len(ours) and set(ours["magic"].astype(int)) <= {0, 1} and ours["crc_ok"].astype(bool).all():
            return "tshark threw on a legacy (magic 0/1) message set that kdissect decodes with valid CRCs"
    return None


def api(msg: KafkaMessage) -> str:
    assert msg.api_key is not None
    return apis.name_of(msg.api_key)


@cache
def records(path: Path):
    return kdissect.open_capture(path).records


@cache
def truth(name: str) -> dict:
    return json.loads((CAPTURES / f"{name}.truth.json").read_text())


def compare(name: str) -> tuple[int, Counter[str], list[str]]:
    """(messages agreeing, explained disagreements by reason, unexplained disagreements)."""
    path, port = CAPTURES / truth(name)["capture"]["file"], truth(name)["broker"]["port"]
    theirs, ours = tshark_pdus(path, port), kdissect_messages(path)
    agree, explained, unexplained = 0, Counter[str](), []
    for key in sorted(set(theirs) | set(ours)):
        ts_list, kd_list = theirs.get(key, []), ours.get(key, [])
        if len(ts_list) != len(kd_list):
            unexplained.append(f"{key}: tshark {len(ts_list)} messages, kdissect {len(kd_list)}")
        for ts, kd in zip(ts_list, kd_list, strict=False):
            if (ts.length, ts.correlation_id, ts.api_key, ts.api_version) == (
                    kd.size, kd.correlation_id, kd.api_key, kd.api_version):
                agree += 1
                continue
            reason = explain(name, port, key[0], ts, kd)
            if reason is None:
                unexplained.append(f"{key}: tshark {ts} vs kdissect "
                                   f"{(kd.size, kd.correlation_id, kd.api_key, kd.api_version)}")
            else:
                explained[reason] += 1
    return agree, explained, unexplained


@pytest.mark.parametrize("name", NAMES)
def test_every_message_agrees_with_tshark_or_the_disagreement_is_explained(name: str) -> None:
    agree, explained, unexplained = compare(name)
    assert unexplained == []
    assert agree > 0
    wrong = sum(n for reason, n in explained.items() if not reason.startswith("orphan"))  # not tshark's fault
    assert agree >= wrong  # tshark is right about most of every capture


def test_the_known_tshark_limitations_all_show_up() -> None:
    """Each explanation is exercised by the corpus, so none is dead code that could hide a bug."""
    reasons = Counter[str]()
    for name in NAMES:
        reasons.update(compare(name)[1])
    kinds = {r.split(":")[0].split(" on ")[0] for r in reasons}
    assert "request cut by the snap length" in kinds
    assert any(r.startswith("tshark threw on a legacy") for r in reasons)
    assert any(r.endswith("a version it does not know") for r in reasons)
