"""What ``show`` and ``decode`` print for people: error codes with their names from the error registry,
record timestamps as ISO times (``--json`` keeps the numbers)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
TRANSACTIONS = CAPTURES / "librdkafka-transactions.pcap"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect.cli", *args], capture_output=True, text=True, timeout=300)


def test_show_names_error_codes() -> None:
    out = cli("show", str(TRANSACTIONS), "--filter", 'api_name == "JoinGroup"').stdout
    assert "error_code: 79 MEMBER_ID_REQUIRED" in out
    assert "error_code: 79\n" not in out


def test_show_prints_record_timestamps_as_iso_times() -> None:
    out = cli("show", str(TRANSACTIONS), "--filter", 'api_name == "Produce"').stdout
    stamps = re.findall(r"^\s+timestamp: (.*)$", out, re.M)
    assert stamps and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", s) for s in stamps), stamps[:3]


def test_json_keeps_numbers() -> None:
    line = cli("show", str(TRANSACTIONS), "--filter", 'api_name == "JoinGroup"', "--json").stdout.splitlines()[0]
    assert json.loads(line)["response"]["body"]["error_code"] == 79


def test_decode_names_error_codes(tmp_path: Path) -> None:
    cli("show", str(TRANSACTIONS), "--filter", 'api_name == "JoinGroup"', "--save-frames", str(tmp_path))
    response = sorted(tmp_path.glob("*-JoinGroup-v*-response.bin"))[0]
    key_version = re.search(r"-v(\d+)-", response.name)
    assert key_version
    out = cli("decode", f"@{response}", "--api-key", "11", "--api-version", key_version.group(1))
    assert out.returncode == 0 and "error_code: 79 MEMBER_ID_REQUIRED" in out.stdout
