"""SASL secrets never reach an output: every face (analyze in every format, show, show --json with
--raw and --save-frames, report html/md/json, live --read) run on a real SCRAM capture and on
synthetic PLAIN and OAUTHBEARER successes, and every file and stream grepped for the password,
the proofs and the token signature, in every form they could take (text, hex, base64).
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from kdissect.cli import main
from tests.faces.sasl_captures import (
    OAUTH_SIGNATURE,
    PLAIN_PASSWORD,
    SERVER_SIGNATURE,
    V0_PASSWORD,
    sasl_orphans,
    sasl_successes,
)

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
SCRAM = CAPTURES / "sasl-scram-logins.pcap"


def _forms(secret: bytes) -> list[bytes]:
    """The ways a secret's bytes could be printed: as they are, as hex, as base64 (both alphabets)."""
    return [secret, secret.hex().encode(), base64.b64encode(secret).rstrip(b"="),
            base64.urlsafe_b64encode(secret).rstrip(b"=")]


def _scram_secrets() -> list[bytes]:
    """The capture's password (the workload's truth) and every proof the clients sent, read from
    the capture's bytes: what SCRAM lets an eavesdropper replay or attack offline."""
    truth = json.loads((CAPTURES / "sasl-scram-logins.truth.json").read_text())
    proofs = re.findall(rb",p=([A-Za-z0-9+/]+=*)", SCRAM.read_bytes())
    handshakes = sum(r["count"] for r in truth["requests_sent"] if r["api_name"] == "SaslHandshake")
    assert len(proofs) == handshakes  # one client-final per login
    out = _forms(truth["sasl_password"].encode())
    for p in proofs:
        out += [p, *_forms(base64.b64decode(p))]
    return out


def _run_every_face(capture: Path, ports: str, out: Path, capsys: pytest.CaptureFixture[str]) -> bytes:
    """Every output kdissect makes of ``capture``: files under ``out``, and what was printed."""
    runs = [
        ["analyze", str(capture), "--ports", ports, "--out", str(out / "parquet")],
        *(["analyze", str(capture), "--ports", ports, "--out", str(out / fmt), "--format", fmt]
          for fmt in ("csv", "jsonl")),
        ["show", str(capture), "--ports", ports, "--full", "--raw", "--save-frames", str(out / "frames")],
        ["show", str(capture), "--ports", ports, "--json", "--raw"],
        *(["report", str(capture), "--ports", ports, "-o", str(out / f"report.{fmt}")]
          for fmt in ("html", "md", "json")),
        ["live", "--read", str(capture), "--port", ports.split(",")[0], "--no-follow", "--quiet", "--out",
         str(out / "live"), "--format", "jsonl"],
    ]
    printed = b""
    for argv in runs:
        assert main(argv) == 0, argv
        got = capsys.readouterr()
        printed += got.out.encode() + got.err.encode()
    return printed


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _leaks(secrets: list[bytes], printed: bytes, files: dict[str, bytes]) -> list[tuple[str, bytes]]:
    return [(name, s) for name, data in {"(printed)": printed, **files}.items() for s in secrets if s in data]


def test_scram_capture_every_output_is_free_of_password_and_proofs(tmp_path: Path, capsys) -> None:
    printed = _run_every_face(SCRAM, "19601", tmp_path, capsys)
    files = _files(tmp_path)
    assert {"report.html", "report.md", "report.json", "csv/connections.csv", "jsonl/exchanges.jsonl"} <= set(files)
    assert b"kd-capture-user" in files["csv/connections.csv"]  # decoded: the user is shown, not the secrets
    assert b"redacted, 32 bytes" in printed and b"redacted, 64 bytes" in printed  # SHA-256 and SHA-512 proofs
    assert _leaks(_scram_secrets(), printed, files) == []


def test_plain_and_oauthbearer_every_output_is_free_of_secrets(tmp_path: Path, capsys) -> None:
    capture = tmp_path / "sasl.pcap"
    capture.write_bytes(sasl_successes())
    out = tmp_path / "out"
    printed = _run_every_face(capture, "9092", out, capsys)
    files = _files(out)
    secrets = [*_forms(PLAIN_PASSWORD), *_forms(V0_PASSWORD), *_forms(OAUTH_SIGNATURE)]
    assert _leaks(secrets, printed, files) == []
    assert b"svc-orders" in printed and b"https://idp.example" in printed  # the JWT's claims are shown
    assert b"redacted, %d bytes" % len(OAUTH_SIGNATURE) in printed


def test_the_grep_finds_a_secret_when_one_is_printed(tmp_path: Path, capsys) -> None:
    """The check above can fail: without redaction, ``show --raw`` prints the PLAIN token's bytes."""
    capture = tmp_path / "sasl.pcap"
    capture.write_bytes(sasl_successes())
    printed = b""
    from kdissect.kafka import sasl

    real = sasl.SaslSession._redact
    try:
        sasl.SaslSession._redact = lambda self, msg, from_client: None  # type: ignore[method-assign]
        assert main(["show", str(capture), "--ports", "9092", "--json", "--raw"]) == 0
        printed = capsys.readouterr().out.encode()
    finally:
        sasl.SaslSession._redact = real  # type: ignore[method-assign]
    assert _leaks(_forms(PLAIN_PASSWORD), printed, {}) != []


def test_decode_of_a_lone_saslauthenticate_frame_redacts_its_token(tmp_path: Path, capsys) -> None:
    from kdissect.testing.encoder import encode_request

    frame = tmp_path / "auth.bin"
    frame.write_bytes(encode_request(36, 2, {"auth_bytes": b"\0alice\0" + PLAIN_PASSWORD}, correlation_id=3))
    for extra in ([], ["--json"], ["--full"]):
        assert main(["decode", f"@{frame}", *extra]) == 0
        printed = capsys.readouterr().out.encode()
        assert b"alice" in printed and _leaks(_forms(PLAIN_PASSWORD), printed, {}) == []


def _windows(secret: bytes, n: int = 8) -> list[bytes]:
    """Every ``n``-byte piece of a secret: a frame cut inside it must not show its first part either."""
    return [secret[i:i + n] for i in range(len(secret) - n + 1)]


@pytest.mark.parametrize("snaplen", [70, 80, 90, 100, 140])  # inside the v0 token, the PLAIN one, the JWT
def test_frames_cut_inside_a_token_show_no_part_of_it(tmp_path: Path, snaplen: int, capsys) -> None:
    capture = tmp_path / "cut.pcap"
    capture.write_bytes(sasl_successes(snaplen))
    frames = tmp_path / "frames"
    assert main(["show", str(capture), "--json", "--raw", "--save-frames", str(frames)]) == 0
    assert main(["show", str(capture), "--raw", "--full"]) == 0
    printed = capsys.readouterr().out.encode()
    assert b"bytes captured: body not decoded" in printed  # frames were cut
    pieces = _windows(PLAIN_PASSWORD) + _windows(V0_PASSWORD)
    assert _leaks([*pieces, *(p.hex().encode() for p in pieces)], printed, _files(frames)) == []


def test_answers_whose_request_is_not_captured_keep_no_token_bytes(tmp_path: Path, capsys) -> None:
    """A SCRAM server-final whose request the capture lacks (by shape), and an answer in the middle of an
    authentication that fits no SaslAuthenticate version (by position): no output holds the signature."""
    capture = tmp_path / "orphans.pcap"
    capture.write_bytes(sasl_orphans())
    out = tmp_path / "out"
    printed = _run_every_face(capture, "9092", out, capsys)
    files = _files(out)
    assert _leaks(_forms(SERVER_SIGNATURE), printed, files) == []
    assert printed.count(b"could be a SASL token: redacted, ") >= 4  # both answers, in show and show --json
    assert b"metadata" in printed.lower()  # the rest of each connection is decoded as before


@pytest.mark.parametrize("snaplen", [80, 100, 120])  # cut inside the server-final's signature
def test_answers_cut_inside_a_token_whose_request_is_not_captured_show_no_part_of_it(
        tmp_path: Path, snaplen: int, capsys) -> None:
    capture = tmp_path / "cut.pcap"
    capture.write_bytes(sasl_orphans(snaplen))
    frames = tmp_path / "frames"
    assert main(["show", str(capture), "--json", "--raw", "--save-frames", str(frames)]) == 0
    assert main(["show", str(capture), "--raw", "--full"]) == 0
    printed = capsys.readouterr().out.encode()
    sig = base64.b64encode(SERVER_SIGNATURE)
    pieces = _windows(sig) + _windows(SERVER_SIGNATURE)
    assert _leaks([*pieces, *(p.hex().encode() for p in pieces)], printed, _files(frames)) == []
