"""By hand, as root: the highest loopback packet rate ``kdissect live`` keeps up with (zero kernel drops),
for small Kafka requests and for large produce batches, against ``tcpdump -w /dev/null`` on the same
traffic with the same kernel buffer.

The traffic is real TCP on 127.0.0.1: a client process sends Produce requests (built with the
project's encoder: a small record, or a ~256 KB batch) at a paced rate, one send per request with
TCP_NODELAY, and a server process answers each with a Produce response carrying its correlation id.
kdissect writes every table (``--out`` to a temporary directory) unless ``--no-tables``; its CPU
seconds (user + system, from ``/usr/bin/time``) give the exchanges per CPU-second.

    sudo python bench/bench_live.py [--seconds 10] [--small 2000,5000,10000,20000] [--large 100,300,1000]
                                    [--port 49321] [--no-tables]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kdissect.testing.encoder import encode_request, encode_response
from kdissect.testing.records_encode import encode_batch, new_record

DEFAULT_PORT = 49321
BUFFER_KIB = 65536  # both tools get libpcap's 64 MiB ring (kdissect's default)


def produce_request(cid: int, records: bytes) -> bytes:
    body = {
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "bench", "partition_data": [{"index": 0, "records": records}]}],
    }
    return encode_request(0, 9, body, correlation_id=cid, client_id="bench-producer")


def produce_response(cid: int) -> bytes:
    body = {
        "responses": [{"name": "bench", "partition_responses": [{"index": 0, "error_code": 0, "base_offset": 1}]}],
        "throttle_time_ms": 0,
    }
    return encode_response(0, 9, body, correlation_id=cid)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        got = sock.recv(n - len(buf))
        if not got:
            raise EOFError
        buf += got
    return buf


def server(ready, port: int) -> None:
    """Answers every request frame with a Produce response of the same correlation id."""
    canned = bytearray(produce_response(0))
    lsock = socket.create_server(("127.0.0.1", port), reuse_port=True)
    ready.set()
    while True:
        conn, _ = lsock.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                size = struct.unpack(">i", _recv_exact(conn, 4))[0]
                frame = _recv_exact(conn, size)
                canned[4:8] = frame[4:8]
                conn.sendall(canned)
        except (EOFError, ConnectionError):
            conn.close()


def client(port: int, rate: int, seconds: float, large: bool, sent) -> None:
    record = new_record(b"k", b"v" * (262_144 if large else 100))
    records = encode_batch([record])
    frame = bytearray(produce_request(0, records))
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=lambda: [None for _ in iter(lambda: sock.recv(1 << 20), b"")], daemon=True).start()
    start = time.monotonic()
    n = 0
    while (now := time.monotonic()) - start < seconds:
        due = int((now - start) * rate)
        while n < due:
            frame[8:12] = struct.pack(">i", n & 0x7FFFFFFF)
            sock.sendall(frame)
            n += 1
        time.sleep(0.0005)
    sent.value = n
    time.sleep(0.5)
    sock.close()


@dataclass
class Run:
    """What one tool reported: packets captured, kernel drops, and for kdissect exchanges and CPU s."""

    packets: int
    drops: int
    exchanges: int | None = None
    cpu: float | None = None


def _kdissect(port: int, seconds: float, tables: bool) -> Callable[[], Run]:
    work = Path(tempfile.mkdtemp(prefix="bench-live-"))
    out = ["--out", str(work / "tables")] if tables else []
    proc = subprocess.Popen(
        ["/usr/bin/time", "-f", "%U %S", "-o", str(work / "cpu"), sys.executable, "-m", "kdissect.cli", "live",
         "-i", "lo", "--ports", str(port), "--duration", str(seconds + 4), "--quiet", "--interval", "1000", *out],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(2.5)  # start-up: imports, libpcap activation

    def result() -> Run:
        text, err = proc.communicate(timeout=120)
        m = re.search(r"([\d,]+) packets, ([\d,]+) exchanges, ([\d,]+) kernel drops", text)
        if not m:
            raise RuntimeError(f"kdissect live said: {text} {err}")
        user, system = (float(v) for v in (work / "cpu").read_text().split()[-2:])
        packets, exchanges, drops = (int(g.replace(",", "")) for g in m.groups())
        shutil.rmtree(work, ignore_errors=True)
        return Run(packets, drops, exchanges, user + system)

    return result


def _tcpdump(port: int) -> Callable[[], Run]:
    proc = subprocess.Popen(
        ["tcpdump", "-i", "lo", "-B", str(BUFFER_KIB), "-s", "262144", "-w", "/dev/null", f"tcp port {port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.5)

    def result() -> Run:
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        captured = int(re.search(r"(\d+) packets captured", err).group(1))
        dropped = int(re.search(r"(\d+) packets dropped by kernel", err).group(1))
        return Run(captured, dropped)

    return result


def measure(tool: str, port: int, rate: int, seconds: float, large: bool, tables: bool) -> tuple[int, Run]:
    """(requests sent, what the tool reported)."""
    result = _kdissect(port, seconds, tables) if tool == "kdissect" else _tcpdump(port)
    sent = mp.Value("q", 0)
    c = mp.Process(target=client, args=(port, rate, seconds, large, sent))
    c.start()
    c.join()
    return sent.value, result()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--small", default="2000,5000,10000,20000", help="request rates to try (small requests)")
    ap.add_argument("--large", default="100,300,1000", help="request rates to try (256 KB produce batches)")
    ap.add_argument("--tools", default="kdissect,tcpdump")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT, help="the server's port (pick one nobody else uses)")
    ap.add_argument("--no-tables", action="store_true", help="kdissect writes no tables (default: every table)")
    args = ap.parse_args()
    ready = mp.Event()
    srv = mp.Process(target=server, args=(ready, args.port), daemon=True)
    srv.start()
    ready.wait(10)
    print(f"{'shape':<6} {'tool':<9} {'target/s':>9} {'sent/s':>9} {'packets/s':>10} {'kernel drops':>13} "
          f"{'CPU s':>6} {'exchanges/CPU-s':>16}")
    try:
        for shape, rates in (("small", args.small), ("large", args.large)):
            for rate in (int(r) for r in rates.split(",") if r):
                for tool in args.tools.split(","):
                    sent, run = measure(tool, args.port, rate, args.seconds, shape == "large", not args.no_tables)
                    cpu = f"{run.cpu:>6.2f}" if run.cpu is not None else f"{'':>6}"
                    per_cpu = f"{run.exchanges / run.cpu:>16,.0f}" if run.cpu and run.exchanges is not None else ""
                    pps = run.packets / args.seconds
                    print(f"{shape:<6} {tool:<9} {rate:>9,} {sent / args.seconds:>9,.0f} {pps:>10,.0f}"
                          f" {run.drops:>13,} {cpu} {per_cpu}", flush=True)
    finally:
        srv.terminate()


if __name__ == "__main__":
    main()
