"""Real Kafka over TLS: tansu behind a TLS terminator, kafka-python, aiokafka or kafkajs writing a key log, both legs
captured at once (the TLS port and the plaintext port behind it), so every decrypted capture comes
with its plaintext truth from the same traffic.

    sudo .venv/bin/python captures/make_tls_captures.py [--only NAME]... [--list]

Writes ``captures/tls/NAME.pcap`` (TLS leg), ``NAME.plain.pcap`` (plaintext leg), ``NAME.keys.log``
(the client's key log: test keys of test traffic) and ``NAME.truth.json`` (what the client did,
from the client; what tshark decrypts with the key log). Ports 19500-19599.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    CAPTURES_DIR,
    WORK_DIR,
    Broker,
    Capture,
    CaptureSpec,
    HarnessError,
    Workload,
    stop_process,
    tool_version,
    wait_for,
)

from kdissect.testing.tls_session import write_certificate

OUT_DIR = CAPTURES_DIR / "tls"
TOPIC = "orders"
TIMEOUT = 120.0


@dataclass(frozen=True)
class TlsScenario:
    name: str
    port: int  # TLS; the broker's plaintext port is port + 1
    tls: str  # "1.3" or "1.2"
    summary: str
    ciphers: str | None = None  # TLS 1.2 (OpenSSL names), on the terminator
    tls13_suite: str | None = None  # TLS 1.3, through the terminator's OPENSSL_CONF
    long_lived: bool = False  # the capture starts after every handshake
    messages: int = 20
    client: str = "kafka-python"


SCENARIOS = [
    TlsScenario("kafka-python-tls13-aesgcm", 19500, "1.3", "TLS 1.3 (default suite, AES-256-GCM): produce, consume"),
    TlsScenario("kafka-python-tls13-chacha20", 19502, "1.3", "TLS 1.3 ChaCha20-Poly1305: produce, consume",
                tls13_suite="TLS_CHACHA20_POLY1305_SHA256"),
    TlsScenario("kafka-python-tls12-aesgcm", 19504, "1.2", "TLS 1.2 ECDHE-RSA AES-128-GCM: produce, consume",
                ciphers="ECDHE-RSA-AES128-GCM-SHA256"),
    TlsScenario("kafka-python-tls12-cbc", 19506, "1.2", "TLS 1.2 ECDHE-RSA AES-256-CBC-SHA384: produce, consume",
                ciphers="ECDHE-RSA-AES256-SHA384"),
    TlsScenario("kafka-python-tls13-long-lived", 19508, "1.3", "TLS 1.3: connections made and warmed up before "
                "the capture starts; 100 messages produced and consumed after", long_lived=True, messages=100),
    TlsScenario("kafka-python-tls12-long-lived", 19510, "1.2", "TLS 1.2: connections made and warmed up before "
                "the capture starts; 100 messages produced and consumed after", ciphers="ECDHE-RSA-AES128-GCM-SHA256",
                long_lived=True, messages=100),
    TlsScenario("aiokafka-tls13-aesgcm", 19512, "1.3", "aiokafka, TLS 1.3 (AES-256-GCM): produce, consume",
                client="aiokafka"),
    TlsScenario("kafkajs-tls13-aesgcm", 19516, "1.3", "kafkajs (Node tls keylog event), TLS 1.3: produce, consume "
                "in a group", client="kafkajs"),
    TlsScenario("aiokafka-tls12-aesgcm", 19514, "1.2", "aiokafka, TLS 1.2 ECDHE-RSA AES-256-GCM: produce, consume",
                ciphers="ECDHE-RSA-AES256-GCM-SHA384", client="aiokafka"),
]  # fmt: skip


def tshark_tls_pdus(path: Path, port: int, keys: Path) -> int:
    """Kafka PDUs tshark's dissector finds in the TLS leg, decrypting with the key log."""
    argv = ["tshark", "-r", str(path), "-o", f"tls.keylog_file:{keys}", "-d", f"tcp.port=={port},tls",
            "-d", f"tls.port=={port},kafka", "-Y", "kafka", "-T", "fields", "-e", "kafka.correlation_id"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return sum(len(line.split(",")) for line in done.stdout.splitlines() if line.strip())


def terminator(s: TlsScenario, work: Path) -> subprocess.Popen:
    cert, key = write_certificate(work)
    argv = [sys.executable, "-m", "kdissect.testing.tls_terminator", str(s.port), str(s.port + 1), str(cert), str(key),
            "--tls", s.tls, *(["--ciphers", s.ciphers] if s.ciphers else [])]  # fmt: skip
    env = dict(os.environ)
    if s.tls13_suite:
        conf = work / "openssl.cnf"
        conf.write_text("openssl_conf = conf\n[conf]\nssl_conf = ssl\n[ssl]\nsystem_default = sys\n"
                        f"[sys]\nCiphersuites = {s.tls13_suite}\n")  # fmt: skip
        env["OPENSSL_CONF"] = str(conf)
    log = (work / "terminator.log").open("w")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise HarnessError(f"the TLS terminator did not start; see {work / 'terminator.log'}")
    return proc


def run(s: TlsScenario) -> dict:
    work = WORK_DIR / s.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    keys, out = work / "keys.log", work / "result.json"
    tail = ["--port", str(s.port), "--out", str(out), "--log", str(work / "client.log"), "--topic", TOPIC,
            "--keylog", str(keys), "--messages", str(s.messages), *(["--max-tls", "1.2"] if s.tls == "1.2" else [])]
    if s.client == "kafkajs":
        argv = ["node", "workloads/kafkajs_tls_wl.js", *tail]
    else:
        argv = [sys.executable, "-m", "workloads.tls_wl", "long-lived" if s.long_lived else "produce-consume",
                *tail, "--client", s.client]
    spec = CaptureSpec()
    legs = {"tls": work / f"{s.name}.pcap", "plain": work / f"{s.name}.plain.pcap"}
    with Broker(s.port + 1, work / "broker.log", advertised=s.port) as broker:
        broker.create_topic(TOPIC, 1)
        proxy = terminator(s, work)
        workload = Workload(argv, work / "workload.out")
        captures = [Capture(spec, s.port, legs["tls"], work / "capture-tls.log"),
                    Capture(spec, s.port + 1, legs["plain"], work / "capture-plain.log")]  # fmt: skip
        try:
            if s.long_lived:
                workload.start(interactive=True)
                workload.wait_for_line("READY", 60)
                with captures[0], captures[1]:
                    workload.tell("go")
                    workload.wait_for_line("DONE", TIMEOUT)
                workload.tell("stop")
                workload.finish(TIMEOUT)
            else:
                with captures[0], captures[1]:
                    workload.start()
                    workload.finish(TIMEOUT)
        finally:
            workload.stop()
            stop_process(proxy)
        truth = {"scenario": s.summary, "broker": broker.describe(), "tls": s.tls,
                 "suite_forced": s.ciphers or s.tls13_suite, "starts_after_handshakes": s.long_lived,
                 "capture": {"tls": f"{s.name}.pcap", "plain": f"{s.name}.plain.pcap",
                             "keylog": f"{s.name}.keys.log", "tls_port": s.port, "plain_port": s.port + 1,
                             "tool": tool_version(["tcpdump", "--version"]),
                             "command": " ".join(spec.argv(s.port, Path(f"{s.name}.pcap")))}}  # fmt: skip
    wait_for(lambda: keys.exists(), 5, "the key log")
    truth |= json.loads(out.read_text())
    truth["tshark_kafka_pdus_decrypted"] = tshark_tls_pdus(legs["tls"], s.port, keys)
    OUT_DIR.mkdir(exist_ok=True)
    shutil.copyfile(legs["tls"], OUT_DIR / f"{s.name}.pcap")
    shutil.copyfile(legs["plain"], OUT_DIR / f"{s.name}.plain.pcap")
    shutil.copyfile(keys, OUT_DIR / f"{s.name}.keys.log")
    (OUT_DIR / f"{s.name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", help="scenario name (repeatable)")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        for s in SCENARIOS:
            print(f"{s.name}: {s.summary}")
        return 0
    for s in SCENARIOS:
        if args.only and s.name not in args.only:
            continue
        truth = run(s)
        print(f"{s.name}: {len(truth['produced'])} produced, {len(truth['consumed'])} consumed, "
              f"tshark decrypts {truth['tshark_kafka_pdus_decrypted']} Kafka PDUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
