"""Keys from a file (--tls-keylog on every command) or from the capture itself (a pcapng Decryption
Secrets Block, as ``editcap --inject-secrets`` writes), and never in any output."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import kdissect
from kdissect.sources.pcapng import DSB_TYPE
from kdissect.sources.shapes import TLS_KEY_LOG
from kdissect.testing.pcapwrite import pcapng_block, write_capture
from tests.conftest import require_tool
from tests.tls.tls_helpers import encrypted, exchanges, plaintext, run, session


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect.cli", *args], capture_output=True, text=True, timeout=300)


def _secrets(keylog: bytes) -> list[str]:
    return [line.split()[2].decode() for line in keylog.splitlines() if line and not line.startswith(b"#")]


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory) -> tuple[Path, Path, bytes]:
    s = session(version="1.2", ciphers="ECDHE-RSA-AES256-GCM-SHA384")
    folder = tmp_path_factory.mktemp("tls")
    cap = folder / "tls.pcap"
    cap.write_bytes(write_capture(encrypted(s)))
    keys = folder / "keys.log"
    keys.write_bytes(s.keylog)
    return cap, keys, s.keylog


def test_analyze_with_a_key_log_writes_decrypted_tables_and_no_secret(tls_files, tmp_path: Path) -> None:
    cap, keys, keylog = tls_files
    out = cli("analyze", str(cap), "--tls-keylog", str(keys), "--out", str(tmp_path / "t"), "--format", "csv")
    assert out.returncode == 0, out.stderr
    assert "TLS: 1 encrypted connections, 1 decrypted" in out.stdout
    conns = pd.read_csv(tmp_path / "t" / "connections.csv")
    assert list(conns["decryption"]) == ["handshake"] and list(conns["tls_version"]) == ["TLS 1.2"]
    assert list(conns["cipher_suite"]) == ["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"]
    assert len(pd.read_csv(tmp_path / "t" / "exchanges.csv")) == 6
    report = cli("report", str(cap), "--tls-keylog", str(keys), "-o", str(tmp_path / "r.html"))
    assert report.returncode == 0, report.stderr
    shown = cli("show", str(cap), "--tls-keylog", str(keys), "--json", "--raw")
    assert shown.returncode == 0 and shown.stdout.count("\n") >= 6
    everything = out.stdout + out.stderr + shown.stdout + (tmp_path / "r.html").read_text()
    everything += "".join(p.read_text() for p in (tmp_path / "t").iterdir())
    for secret in _secrets(keylog):
        assert secret.lower() not in everything.lower()


def test_without_the_key_log_the_summary_says_not_decrypted(tls_files) -> None:
    cap, _, _ = tls_files
    out = cli("analyze", str(cap))
    assert out.returncode == 0 and "TLS: 1 encrypted connections, 0 decrypted" in out.stdout
    missing = cli("analyze", str(cap), "--tls-keylog", "/nonexistent/keys.log")
    assert missing.returncode != 0 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr


def _with_dsb(s) -> bytes:
    capture = write_capture(encrypted(s), fmt="pcapng")
    block_len = struct.unpack_from("<I", capture, 4)[0]  # the section header block comes first
    body = struct.pack("<II", TLS_KEY_LOG, len(s.keylog)) + s.keylog + bytes(-len(s.keylog) % 4)
    return capture[:block_len] + pcapng_block(DSB_TYPE, body) + capture[block_len:]


def test_a_decryption_secrets_block_is_used_automatically(tmp_path: Path) -> None:
    s = session(version="1.3")
    path = tmp_path / "dsb.pcapng"
    path.write_bytes(_with_dsb(s))
    cap = kdissect.open_capture(path)
    assert list(cap.connections["decryption"]) == ["handshake"]
    assert len(cap.exchanges) == len(exchanges(run(plaintext(s))))


def test_editcap_inject_secrets_is_read(tls_files, tmp_path: Path) -> None:
    require_tool("editcap")
    cap, keys, _ = tls_files
    out = tmp_path / "injected.pcapng"
    subprocess.run(["editcap", "--inject-secrets", f"tls,{keys}", str(cap), str(out)], check=True, capture_output=True)
    conns = kdissect.open_capture(out).connections
    assert list(conns["decryption"]) == ["handshake"]


def test_live_reads_the_key_log_too(tls_files, tmp_path: Path) -> None:
    cap, keys, keylog = tls_files
    out = cli("live", "--read", str(cap), "--no-follow", "--quiet", "--tls-keylog", str(keys),
              "--out", str(tmp_path / "live"), "--format", "csv")  # fmt: skip
    assert out.returncode == 0, out.stderr
    conns = pd.concat(pd.read_csv(p) for p in (tmp_path / "live").glob("connections*.csv"))
    assert list(conns["decryption"]) == ["handshake"]
    assert len(pd.concat(pd.read_csv(p) for p in (tmp_path / "live").glob("exchanges*.csv"))) == 6
    for secret in _secrets(keylog):
        assert secret not in out.stdout + out.stderr


def test_a_key_log_of_junk_is_one_line_of_counts(tls_files, tmp_path: Path) -> None:
    cap, _, _ = tls_files
    junk = tmp_path / "junk.log"
    junk.write_text("not a key log\nCLIENT_RANDOM zz 00\n")
    out = cli("analyze", str(cap), "--tls-keylog", str(junk))
    assert out.returncode == 0
    assert out.stderr == f"kdissect: {junk}: 0 TLS sessions, 2 lines that are no key log lines (skipped)\n"
    assert "0 decrypted" in out.stdout


def test_the_report_says_how_many_connections_were_decrypted(tls_files, tmp_path: Path) -> None:
    cap, keys, _ = tls_files
    out = cli("report", str(cap), "--tls-keylog", str(keys), "-o", str(tmp_path / "r.md"))
    assert out.returncode == 0, out.stderr
    assert "TLS connections" in (tmp_path / "r.md").read_text() and "1 (1 decrypted)" in (tmp_path / "r.md").read_text()


def test_live_follows_a_key_log_that_does_not_exist_yet(tls_files, tmp_path: Path) -> None:
    cap, _, _ = tls_files
    out = cli("live", "--read", str(cap), "--no-follow", "--quiet", "--tls-keylog", str(tmp_path / "later.log"))
    assert out.returncode == 0, out.stderr
