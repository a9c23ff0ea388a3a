"""`kdissect decode`: hex or @file, with or without size prefix, JSON or tree, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kdissect.testing.encoder import encode_request, encode_response

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect.cli", *args], capture_output=True, text=True, timeout=300)


def test_decode_request_hex_as_json_without_size_prefix() -> None:
    frame = encode_request(3, 12, {"topics": [{"name": "orders"}]}, correlation_id=5,
                           size_prefix=False)
    out = run("decode", frame.hex(), "--json")
    assert out.returncode == 0, out.stderr
    msg = json.loads(out.stdout)
    assert msg["header"]["request_api_key"] == 3 and msg["header"]["correlation_id"] == 5
    assert msg["body"]["topics"][0]["name"] == "orders"


def test_decode_response_from_file_as_tree(tmp_path: Path) -> None:
    body = {"error_code": 0, "topics": [], "throttle_time_ms": 0}
    (tmp_path / "frame.bin").write_bytes(encode_response(3, 1, body, correlation_id=9))
    out = run("decode", f"@{tmp_path / 'frame.bin'}", "--api-key", "3", "--api-version", "1")
    assert out.returncode == 0, out.stderr
    assert "correlation_id: 9" in out.stdout and "controller_id:" in out.stdout


def test_uuid_and_bytes_render_as_strings_in_json() -> None:
    # (not SaslAuthenticate's auth_bytes: a SASL token is decoded and redacted, see docs/sasl.md)
    body = {"group_id": "g", "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"\x00\xff"}]}
    frame = encode_request(11, 0, body, correlation_id=1)
    msg = json.loads(run("decode", frame.hex(), "--json").stdout)
    assert msg["body"]["protocols"][0]["metadata"] == "00ff"


def test_shipped_example_frame_decodes() -> None:
    out = run("decode", f"@{ROOT / 'captures' / 'frames' / 'api_versions_v3.hex'}")
    assert out.returncode == 0 and 'client_software_name: "apache-kafka-java"' in out.stdout


def test_bad_input_is_one_line_and_nonzero(tmp_path: Path) -> None:
    cases = [
        ("decode", "zz"),
        ("decode", "00010203"),
        ("decode", "ffff000000000001"),
        ("decode", "00000001", "--api-key", "3"),
        ("decode", f"@{tmp_path / 'missing.bin'}"),
        ("decode", "0003000c00000001", "--api-key", "999", "--api-version", "0"),
    ]
    for args in cases:
        out = run(*args)
        assert out.returncode != 0, args
        assert out.stderr.startswith("kdissect: ") and out.stderr.count("\n") == 1, (args, out.stderr)
        assert "Traceback" not in out.stderr


def test_wire_strings_cannot_reach_the_terminal_raw() -> None:
    frame = encode_request(3, 1, {"topics": [{"name": "evil\x1b[2J\x07"}]}, client_id="c\x1b]0;x\x07")
    out = run("decode", frame.hex())
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout
    assert "\\x1b[2J" in out.stdout
