"""By hand, as root: the highest loopback packet rate ``kdissect live`` keeps up with (zero kernel drops),
for small Kafka requests and for large produce batches, against ``tcpdump -w /dev/null`` on the same
traffic with the same kernel buffer.

The traffic is real TCP on 127.0.0.1: a client process sends Produce requests (built with the
project's encoder: a small record, or a ~256 KB batch) at a paced rate over ``--connections``
connections, one send per request with TCP_NODELAY, each connection with at most ``--in-flight``
unanswered (as a Kafka producer), and a server process answers each with a Produce response carrying
its correlation id, one send per response. kdissect writes every table (``--out`` to a temporary
directory) unless ``--no-tables``; its CPU seconds (user + system, from ``/usr/bin/time``) give the
exchanges per CPU-second. The load generator shares the cores: its client's and server's CPU seconds
in the same run are shown beside kdissect's (each is one thread with a selector: a send per request
and per response, a read per burst; most of their CPU is the kernel's loopback TCP, not Python).
``--timeline`` prints kdissect's line of each second, with the kernel drops so far.

    sudo python bench/bench_live.py [--seconds 10] [--small 2000,5000,10000,20000] [--large 100,300,1000]
                                    [--port 49321] [--no-tables] [--connections 64] [--in-flight 5]
                                    [--timeline]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench_spark import cpu_s

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


RESPONSE = produce_response(0)


def server(ready, port: int) -> None:
    """Answers every request frame with a Produce response of the same correlation id, one send per
    response (as a broker writes each), every connection in one thread: a read takes what has come."""
    canned = bytearray(RESPONSE)
    lsock = socket.create_server(("127.0.0.1", port), reuse_port=True, backlog=128)
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ)
    held: dict[socket.socket, bytearray] = {}
    ready.set()
    while True:
        for key, _ in sel.select():
            sock = key.fileobj
            if sock is lsock:
                conn, _ = lsock.accept()
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sel.register(conn, selectors.EVENT_READ)
                held[conn] = bytearray()
                continue
            try:
                got = sock.recv(1 << 18)
            except ConnectionError:
                got = b""
            if not got:
                sel.unregister(sock)
                sock.close()
                del held[sock]
                continue
            buf = held[sock]
            buf += got
            at, n = 0, len(buf)
            while n - at >= 12 and n - at - 4 >= (size := int.from_bytes(buf[at:at + 4], "big")):
                canned[4:8] = buf[at + 8:at + 12]
                sock.sendall(canned)
                at += 4 + size
            del buf[:at]


def client(port: int, rate: int, seconds: float, large: bool, connections: int, in_flight: int, sent, cpu) -> None:
    """Requests at ``rate`` a second over ``connections`` connections, each with at most ``in_flight``
    unanswered (a Kafka producer's max.in.flight.requests.per.connection is 5; 0: no bound), one send per
    request; one thread, answers counted by their fixed size."""
    record = new_record(b"k", b"v" * (262_144 if large else 100))
    frame = bytearray(produce_request(0, encode_batch([record])))
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(connections)]
    sel = selectors.DefaultSelector()
    waiting, answered = {}, {}  # per socket: requests sent and not answered; answer bytes not yet counted
    for sock in socks:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sel.register(sock, selectors.EVENT_READ)
        waiting[sock], answered[sock] = 0, 0
    free = deque(socks)  # connections that may send now, in turn
    answer, in_flight = len(RESPONSE), in_flight or sys.maxsize
    start = time.monotonic()
    n = 0
    while (now := time.monotonic()) - start < seconds:
        due = int((now - start) * rate)
        while n < due and free:
            sock = free.pop()
            frame[8:12] = (n & 0x7FFFFFFF).to_bytes(4, "big")
            sock.sendall(frame)
            n += 1
            waiting[sock] += 1
            if waiting[sock] < in_flight:
                free.appendleft(sock)
        for key, _ in sel.select(0.0005):
            sock = key.fileobj
            data = sock.recv(1 << 18)
            if not data:  # (the server closed it: no more answers)
                sel.unregister(sock)
                continue
            total = answered[sock] + len(data)
            done, answered[sock] = divmod(total, answer)
            if done:
                if waiting[sock] >= in_flight:
                    free.appendleft(sock)
                waiting[sock] -= done
    sent.value = n
    cpu.value = time.process_time()
    time.sleep(0.5)
    for sock in socks:
        sock.close()


@dataclass
class Run:
    """What one tool reported: packets captured, kernel drops, and for kdissect exchanges and CPU s."""

    packets: int
    drops: int
    exchanges: int | None = None
    cpu: float | None = None
    client_cpu: float = 0.0  # the load generator's CPU s (client process; server process) in the same run
    server_cpu: float = 0.0


def _kdissect(port: int, seconds: float, tables: bool, timeline: bool) -> Callable[[], Run]:
    work = Path(tempfile.mkdtemp(prefix="bench-live-"))
    out = ["--out", str(work / "tables")] if tables else []
    interval = "1" if timeline else "1000"
    proc = subprocess.Popen(
        ["/usr/bin/time", "-f", "%U %S", "-o", str(work / "cpu"), sys.executable, "-m", "kdissect.cli", "live",
         "-i", "lo", "--ports", str(port), "--duration", str(seconds + 4), "--quiet", "--interval", interval, *out],
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
        if timeline:  # kdissect's line each second: when the drops came
            print("".join(f"    {line}\n" for line in text.splitlines() if line.startswith("live ")), end="")
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


def measure(tool: str, port: int, rate: int, seconds: float, large: bool, tables: bool, server_pid: int,
            connections: int, in_flight: int, timeline: bool = False) -> tuple[int, Run]:
    """(requests sent, what the tool reported, with the client's and the server's CPU seconds)."""
    result = _kdissect(port, seconds, tables, timeline) if tool == "kdissect" else _tcpdump(port)
    sent, cpu = mp.Value("q", 0), mp.Value("d", 0.0)
    server_before = cpu_s(server_pid)
    c = mp.Process(target=client, args=(port, rate, seconds, large, connections, in_flight, sent, cpu))
    c.start()
    c.join()
    run = result()
    run.client_cpu, run.server_cpu = cpu.value, cpu_s(server_pid) - server_before
    return sent.value, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--small", default="2000,5000,10000,20000", help="request rates to try (small requests)")
    ap.add_argument("--large", default="100,300,1000", help="request rates to try (256 KB produce batches)")
    ap.add_argument("--tools", default="kdissect,tcpdump")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT, help="the server's port (pick one nobody else uses)")
    ap.add_argument("--no-tables", action="store_true", help="kdissect writes no tables (default: every table)")
    ap.add_argument("--connections", type=int, default=64, help="client connections the requests are spread over")
    ap.add_argument("--in-flight", type=int, default=5, help="unanswered requests a connection may have (a Kafka "
                    "producer's default max.in.flight.requests.per.connection; 0: no bound)")
    ap.add_argument("--timeline", action="store_true", help="print kdissect's line of each second (when drops came)")
    args = ap.parse_args()
    ready = mp.Event()
    srv = mp.Process(target=server, args=(ready, args.port), daemon=True)
    srv.start()
    ready.wait(10)
    print(f"{'shape':<6} {'tool':<9} {'target/s':>9} {'sent/s':>9} {'packets/s':>10} {'kernel drops':>13} "
          f"{'CPU s':>6} {'exchanges/CPU-s':>16} {'client CPU s':>13} {'server CPU s':>13}")
    try:
        for shape, rates in (("small", args.small), ("large", args.large)):
            for rate in (int(r) for r in rates.split(",") if r):
                for tool in args.tools.split(","):
                    sent, run = measure(tool, args.port, rate, args.seconds, shape == "large", not args.no_tables,
                                        srv.pid, args.connections, args.in_flight, args.timeline)
                    cpu = f"{run.cpu:>6.2f}" if run.cpu is not None else f"{'':>6}"
                    per_cpu = f"{run.exchanges / run.cpu:>16,.0f}" if run.cpu and run.exchanges is not None else ""
                    pps = run.packets / args.seconds
                    print(f"{shape:<6} {tool:<9} {rate:>9,} {sent / args.seconds:>9,.0f} {pps:>10,.0f}"
                          f" {run.drops:>13,} {cpu} {per_cpu:>16} {run.client_cpu:>13.2f} {run.server_cpu:>13.2f}",
                          flush=True)
    finally:
        srv.terminate()


if __name__ == "__main__":
    main()
